// Package requestlog gives the fields that tie a log line to the request
// it was written for. It is a leaf (it imports no module but the http
// floor, httpapi), so that a handler's module logs them without importing
// the telemetry module.
package requestlog

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// IDCarrier is the request's answer tracker when it knows the request's id:
// the telemetry module's record of the exchange is one.
type IDCarrier interface {
	RequestID() string
}

// Fields are the fields that tie a log line written while serving a
// request to that request: its request id, and its trace and span ids when
// it is traced. Handlers add them to the lines they log, such as the detail
// of a 500, so that the line can be found from the access log or the trace.
func Fields(ctx context.Context) []zap.Field {
	fields := make([]zap.Field, 0, 3)
	if ids, ok := httpapi.AnswerTrackerFrom(ctx).(IDCarrier); ok {
		if id := ids.RequestID(); id != "" {
			fields = append(fields, zap.String("request_id", id))
		}
	}
	return AppendTraceFields(fields, trace.SpanContextFromContext(ctx))
}

// AppendTraceFields adds trace_id and span_id when sc is valid; an untraced
// request has neither, rather than fields of zeros.
func AppendTraceFields(fields []zap.Field, sc trace.SpanContext) []zap.Field {
	if !sc.IsValid() {
		return fields
	}
	return append(fields,
		zap.Stringer("trace_id", sc.TraceID()),
		zap.Stringer("span_id", sc.SpanID()),
	)
}
