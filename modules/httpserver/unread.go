package httpserver

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// UnreadBodyGrace is how long the server still waits for the body of a
// request that was answered without reading it all.
const UnreadBodyGrace = time.Second

// Bounding the wait for bodies that nobody reads: when a handler answers
// without reading the whole body (a 401, 404, 413, 415, 429 or 503),
// net/http reads up to 256 KiB of what is left, before sending the answer,
// so that the connection can serve another request; a client that declares
// a body and never sends it would hold the connection and a goroutine until
// the read timeout (30s). After such an answer the read deadline moves to
// UnreadBodyGrace from now: a client that sends its body promptly keeps its
// connection, one that does not is cut off after the grace, and its answer
// is sent as the connection closes. Resolve, which owns a copy of the
// request anyway, does this for the whole chain.

// watchBody makes r, a copy of the server's request that the caller owns,
// read its body through er, and reports whether there is a body to watch.
func watchBody(r *http.Request, er *eofReader) bool {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return false
	}
	er.ReadCloser = r.Body
	r.Body = er
	return true
}

// boundUnreadBody shortens the wait for the rest of a body the answer left unread.
func boundUnreadBody(w http.ResponseWriter, er *eofReader) {
	if !er.eof {
		// Unsupported only by test recorders, where there is no connection.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(UnreadBodyGrace))
	}
}

// eofReader records whether its reader reached the end.
type eofReader struct {
	io.ReadCloser
	eof bool
}

func (r *eofReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		r.eof = true
	}
	return n, err
}
