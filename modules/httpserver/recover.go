package httpserver

import (
	"net/http"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// Recoverer turns a panic in a handler into a 500 Error answer, a logged
// stack with the request's trace id, and a count in
// plantstore_http_panics_total, so one bad request cannot take the process
// down and none goes unnoticed.
type Recoverer struct {
	log    *zap.Logger
	panics prometheus.Counter
}

// NewRecoverer registers the panic counter on reg.
func NewRecoverer(log *zap.Logger, reg prometheus.Registerer) (*Recoverer, error) {
	panics := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "plantstore_http_panics_total",
		Help: "API requests whose handler panicked; each answered 500 and logged its stack.",
	})
	if err := reg.Register(panics); err != nil {
		return nil, err
	}
	return &Recoverer{log: log, panics: panics}, nil
}

// Wrap is the middleware.
func (rc *Recoverer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// started reports whether the handler began its answer. The
		// telemetry links above track that already; alone, Recover watches
		// the writer itself.
		started := httpapi.AnswerTrackerFrom(r.Context())
		if started == nil {
			watch := &answerWatch{ResponseWriter: w}
			w, started = watch, watch
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			//nolint:errorlint // net/http compares the panic value with == too; it is never wrapped
			if v == http.ErrAbortHandler { // the server's own way to abort an answer: pass it on
				panic(v)
			}
			rc.panics.Inc()
			fields := []zap.Field{
				zap.Any("panic", v),
				zap.ByteString("stack", debug.Stack()),
				zap.String("method", r.Method),
				zap.String("route", httpapi.RouteTemplate(r.Context())),
			}
			if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
				fields = append(fields, zap.String("trace_id", sc.TraceID().String()))
			}
			rc.log.Error("panic in handler", fields...)
			if started.AnswerStarted() {
				// Part of an answer is out: appending an Error would send a
				// corrupt one. Abort the connection instead, so that the
				// client sees a broken answer, never a wrong one.
				panic(http.ErrAbortHandler)
			}
			httperr.Write(w, http.StatusInternalServerError, "internal error")
		}()
		next.ServeHTTP(w, r)
	})
}

// answerWatch is the writer Recover watches when no telemetry link above
// tracks the answer. Handlers reach the server's Flusher or Hijacker through
// http.ResponseController, which follows Unwrap.
type answerWatch struct {
	http.ResponseWriter
	begun bool
}

func (a *answerWatch) WriteHeader(code int) {
	if code < 100 || code > 199 { // an interim 1xx is not the answer
		a.begun = true
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerWatch) Write(b []byte) (int, error) {
	a.begun = true
	return a.ResponseWriter.Write(b)
}

func (a *answerWatch) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// AnswerStarted implements AnswerTracker.
func (a *answerWatch) AnswerStarted() bool { return a.begun }
