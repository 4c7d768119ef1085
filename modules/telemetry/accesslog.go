package telemetry

import (
	"net/http"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/telemetry/requestlog"
)

// AccessLog writes one info line per API request: method, route template,
// status, duration, response bytes, request id, the caller (the name of the
// request's principal, when auth accepted it: never a token), and the trace
// and span ids when the request is traced. It takes the request id from X-Request-ID
// when the client sent a usable one, generates one otherwise, and echoes it
// in the response. It logs no other header and no path, so neither the
// Authorization header nor a token can reach the log.
func AccessLog(log *zap.Logger) httpapi.Middleware {
	log = log.Named("access")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w, r, ex := captureExchange(w, r)
			ex.requestID = requestID(r.Header.Get(requestIDHeader))
			ex.requestIDValue[0] = ex.requestID
			w.Header()[requestIDHeader] = ex.requestIDValue[:]
			served := false
			defer func() {
				if !served {
					ex.panicked()
				}
				if ce := log.Check(zapcore.InfoLevel, "request"); ce != nil {
					ce.Write(accessFields(r, ex)...)
				}
			}()
			next.ServeHTTP(w, r)
			served = true
		})
	}
}

// accessFieldCount is the most fields an access line has: six, the caller,
// and the trace and span ids.
const accessFieldCount = 9

func accessFields(r *http.Request, ex *exchange) []zap.Field {
	fields := append(ex.fields[:0],
		zap.String("method", methodLabel(r.Method)), // bounded: a client can send any token
		zap.String("route", httpapi.RouteTemplate(r.Context())),
		zap.Int("status", ex.status),
		zap.Duration("duration", ex.elapsed()),
		zap.Int64("bytes", ex.bytes),
		zap.String("request_id", ex.requestID),
	)
	// Auth runs inside this link; the principal it attached is in the
	// router's record, which this request's context reaches.
	if p := principal.FromContext(r.Context()); p != nil {
		fields = append(fields, zap.String("caller", p.Name))
	}
	return requestlog.AppendTraceFields(fields, trace.SpanContextFromContext(r.Context()))
}
