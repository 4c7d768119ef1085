package telemetry

import (
	"net/http"

	"github.com/felixge/httpsnoop"
	"go.uber.org/zap"

	httpserver "github.com/plantstore/plantstore/modules/http"
)

// AccessLog writes one info line per API request: method, route template,
// status, duration, response bytes. It never logs headers, so neither the
// Authorization header nor a token can reach the log.
func AccessLog(log *zap.Logger) httpserver.Middleware {
	log = log.Named("access")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m := httpsnoop.CaptureMetrics(next, w, r)
			log.Info("request",
				zap.String("method", r.Method),
				zap.String("route", httpserver.RouteTemplate(r.Context())),
				zap.Int("status", m.Code),
				zap.Duration("duration", m.Duration),
				zap.Int64("bytes", m.Written),
			)
		})
	}
}
