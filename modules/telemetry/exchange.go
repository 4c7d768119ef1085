package telemetry

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// exchange is what the telemetry middlewares learn about one request while
// it is served: when it started, the status and size of the answer, and the
// request id. The outermost of the metrics and access-log middlewares
// captures it once and leaves it in the context, so the response writer is
// wrapped once per request, not once per middleware, and both report the
// same status and duration.
//
// The exchange is itself the wrapped writer: one allocation per request. It
// is written by hand rather than with httpsnoop, whose hooks cost eight
// allocations per request on the create path (see BenchmarkCreateChain); API
// handlers answer small JSON bodies and need no Flusher or ReaderFrom.
type exchange struct {
	http.ResponseWriter
	start       time.Time
	status      int
	bytes       int64
	wroteHeader bool
	requestID   string

	// Storage that the access log and the X-Request-Id header use, kept
	// here so that they cost no allocation of their own.
	requestIDValue [1]string
	fields         [accessFieldCount]zap.Field
}

// exchangeFrom returns the exchange an outer middleware captures, or nil.
// The exchange travels as the request's httpapi.AnswerTracker, so that
// Recover, further down the chain, asks it whether the answer has begun
// instead of wrapping the writer again.
func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := httpapi.AnswerTrackerFrom(ctx).(*exchange)
	return ex
}

// captureExchange returns the request's exchange. When no outer middleware
// captures one yet, it starts one: the exchange wraps w to record the answer,
// and the returned request's context carries it.
func captureExchange(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, *exchange) {
	if ex := exchangeFrom(r.Context()); ex != nil {
		return w, r, ex
	}
	ex := &exchange{ResponseWriter: w, start: time.Now(), status: http.StatusOK}
	return ex, httpapi.WithAnswerTracker(r, ex), ex
}

// WriteHeader implements http.ResponseWriter.
func (ex *exchange) WriteHeader(code int) {
	ex.ResponseWriter.WriteHeader(code)
	ex.header(code)
}

// Write implements http.ResponseWriter.
func (ex *exchange) Write(b []byte) (int, error) {
	n, err := ex.ResponseWriter.Write(b)
	ex.wroteHeader = true
	ex.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the server's writer for Flush,
// Hijack and deadlines, which the exchange does not re-export.
func (ex *exchange) Unwrap() http.ResponseWriter { return ex.ResponseWriter }

// header records the first final status; 1xx answers are interim.
func (ex *exchange) header(code int) {
	if ex.wroteHeader || (code >= 100 && code <= 199) {
		return
	}
	ex.status = code
	ex.wroteHeader = true
}

// RequestID implements requestlog.IDCarrier: the id the access log gave the
// request, "" before it did.
func (ex *exchange) RequestID() string { return ex.requestID }

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
