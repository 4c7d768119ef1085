package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// RequestFields are the fields that tie a log line written while serving a
// request to that request: its request id, and its trace and span ids when
// it is traced. Handlers add them to the lines they log, such as the detail
// of a 500, so that the line can be found from the access log or the trace.
func RequestFields(ctx context.Context) []zap.Field {
	fields := make([]zap.Field, 0, 3)
	if ex := exchangeFrom(ctx); ex != nil && ex.requestID != "" {
		fields = append(fields, zap.String("request_id", ex.requestID))
	}
	return appendTraceFields(fields, trace.SpanContextFromContext(ctx))
}

// appendTraceFields adds trace_id and span_id when sc is valid; an untraced
// request has neither, rather than fields of zeros.
func appendTraceFields(fields []zap.Field, sc trace.SpanContext) []zap.Field {
	if !sc.IsValid() {
		return fields
	}
	return append(fields,
		zap.Stringer("trace_id", sc.TraceID()),
		zap.Stringer("span_id", sc.SpanID()),
	)
}
