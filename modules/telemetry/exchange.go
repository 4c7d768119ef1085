package telemetry

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/felixge/httpsnoop"

	httpserver "github.com/plantstore/plantstore/modules/http"
)

// exchange is what the telemetry middlewares learn about one request while
// it is served: when it started, the status and size of the answer, and the
// request id. The outermost of the metrics and access-log middlewares
// captures it once and leaves it in the context, so the response writer is
// wrapped once per request, not once per middleware, and both report the
// same status and duration.
type exchange struct {
	start       time.Time
	status      int
	bytes       int64
	wroteHeader bool
	requestID   string
}

// exchangeFrom returns the exchange an outer middleware captures, or nil.
// The exchange travels as the request's httpserver.AnswerTracker, so that
// Recover, further down the chain, asks it whether the answer has begun
// instead of wrapping the writer again.
func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := httpserver.AnswerTrackerFrom(ctx).(*exchange)
	return ex
}

// captureExchange returns the request's exchange. When no outer middleware
// captures one yet, it starts one: it wraps w to record the answer and
// returns a request whose context carries the exchange.
func captureExchange(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, *exchange) {
	if ex := exchangeFrom(r.Context()); ex != nil {
		return w, r, ex
	}
	ex := &exchange{start: time.Now(), status: http.StatusOK}
	// httpsnoop keeps the writer's optional interfaces (Flusher, Hijacker,
	// ReaderFrom) visible, which a hand-written wrapper would hide.
	w = httpsnoop.Wrap(w, httpsnoop.Hooks{
		WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) {
				next(code)
				ex.header(code)
			}
		},
		Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
			return func(b []byte) (int, error) {
				n, err := next(b)
				ex.wroteHeader = true
				ex.bytes += int64(n)
				return n, err
			}
		},
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) {
				n, err := next(src)
				ex.wroteHeader = true
				ex.bytes += n
				return n, err
			}
		},
	})
	return w, httpserver.WithAnswerTracker(r, ex), ex
}

// header records the first final status; 1xx answers are interim.
func (ex *exchange) header(code int) {
	if ex.wroteHeader || (code >= 100 && code <= 199) {
		return
	}
	ex.status = code
	ex.wroteHeader = true
}

// AnswerStarted reports whether a final status or body bytes were written.
func (ex *exchange) AnswerStarted() bool { return ex.wroteHeader }

// panicked records a handler that panicked before answering: the recover
// middleware outside answers 500.
func (ex *exchange) panicked() {
	if !ex.wroteHeader {
		ex.status = http.StatusInternalServerError
	}
}

// elapsed is the time since the request reached the first telemetry link.
func (ex *exchange) elapsed() time.Duration { return time.Since(ex.start) }
