package httpserver

import (
	"context"
	"errors"
	"net/http"
)

// HEAD ends with its headers. A route that serves GET serves HEAD through
// the same handler (router.go), and net/http, knowing the request is a
// HEAD, drops the body: writes succeed and send nothing. A handler whose
// answer lasts as long as its client wants (a stream of events) would then
// run on, unseen, holding a request slot and the connection, so that the
// next request on it is never read. headWriter ends such an answer once
// its headers are out: the request's context is cancelled as soon as the
// handler starts its answer (a status or a first write), and every write
// after the headers went to the client (a flush) fails, so that a handler
// that waits on its context or checks its writes returns. A handler that
// writes its whole answer and returns is unaffected: net/http still counts
// the body's length for the Content-Length a GET would have.

// errHeadAnswered is the error of a write to a HEAD answer whose headers
// are out: there is nothing more to send.
var errHeadAnswered = errors.New("HEAD: the headers are sent; the answer has no body")

// headWriter is the writer of a HEAD request's handler.
type headWriter struct {
	http.ResponseWriter
	cancel  context.CancelFunc
	flushed bool
}

func (h *headWriter) WriteHeader(code int) {
	h.ResponseWriter.WriteHeader(code)
	if code >= http.StatusOK || code == http.StatusSwitchingProtocols {
		h.cancel()
	}
}

func (h *headWriter) Write(p []byte) (int, error) {
	if h.flushed {
		return 0, errHeadAnswered
	}
	h.cancel()
	return h.ResponseWriter.Write(p)
}

// FlushError sends the headers the first time; it fails after, so that a
// stream sees its client as gone.
func (h *headWriter) FlushError() error {
	if h.flushed {
		return errHeadAnswered
	}
	h.flushed = true
	h.cancel()
	return http.NewResponseController(h.ResponseWriter).Flush()
}

// Flush implements http.Flusher for handlers that use it directly.
func (h *headWriter) Flush() { _ = h.FlushError() }

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (h *headWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// serveHead serves a HEAD request with get, the route's GET handler, which
// sees it as the GET it stands for, so that handlers which check the
// method answer it too.
func serveHead(get http.Handler, w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	asGet := r.WithContext(ctx)
	asGet.Method = http.MethodGet
	get.ServeHTTP(&headWriter{ResponseWriter: w, cancel: cancel}, asGet)
}
