package httpserver

import (
	"net/http"
	"runtime/debug"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// Middlewares are the API chain's links that other modules own.
type Middlewares struct {
	fx.In

	Tracing   Middleware `name:"tracing"`
	Metrics   Middleware `name:"metrics"`
	AccessLog Middleware `name:"access_log"`
	Auth      Middleware `name:"auth"`
}

// NewAPIHandler assembles the API listener's chain, outermost first:
// route resolution (which only matches, so that everything below knows the
// route template), recover, tracing, metrics, access log, auth, then the
// matched handler. Auth sits inside the telemetry links so that rejected
// requests are counted, traced and logged, and before the handler so that
// nothing of an unauthenticated request is read.
func NewAPIHandler(router *Router, m Middlewares, log *zap.Logger) http.Handler {
	h := router.Dispatch()
	h = m.Auth(h)
	h = m.AccessLog(h)
	h = m.Metrics(h)
	h = m.Tracing(h)
	h = Recover(log)(h)
	return router.Resolve(h)
}

// Recover turns a panic in a handler into a 500 Error answer and a logged
// stack, so one bad request cannot take the process down.
func Recover(log *zap.Logger) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler { // the server's own way to abort a response
					panic(v)
				}
				log.Error("panic in handler", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()),
					zap.String("route", RouteTemplate(r.Context())))
				httperr.Write(w, http.StatusInternalServerError, "internal error")
			}()
			next.ServeHTTP(w, r)
		})
	}
}
