package httpapi

import (
	"bytes"
	"net/http"
)

// A route that takes a body declares it (ReadsBody), so that the http
// module's chain reads the body before the concurrency cap, and its
// handler takes the bytes from ReadBody instead of reading them itself:
// one read, into one buffer. Why before the cap: see the http module's
// readahead.go.

// ReadsBody marks h as the handler of a route whose requests carry a body
// of at most limit bytes, to be read before the concurrency cap. The
// handler gets it from ReadBody.
func ReadsBody(limit int64, h http.Handler) http.Handler {
	return &bodyRoute{Handler: h, limit: limit}
}

type bodyRoute struct {
	http.Handler
	limit int64
}

// BodyLimit reports the limit h was declared with by ReadsBody, and false
// for a handler that ReadsBody did not make.
func BodyLimit(h http.Handler) (int64, bool) {
	route, ok := h.(*bodyRoute)
	if !ok {
		return 0, false
	}
	return route.limit, true
}

// BodyAhead is a request body that the chain read ahead of the handler:
// the bytes read, and the error that ended the read.
type BodyAhead interface {
	Ahead() ([]byte, error)
}

// ReadBody returns the request's body, at most limit bytes: what the chain
// read ahead for a ReadsBody route, or else read now into buf. Over the
// limit the error is an *http.MaxBytesError, also when the declared length
// is over it (then nothing is read). The bytes are valid until the handler
// returns.
func ReadBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, limit int64) ([]byte, error) {
	if ahead, ok := r.Body.(BodyAhead); ok {
		return ahead.Ahead()
	}
	if err := ReadInto(w, r, buf, limit); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadInto reads at most limit bytes of r's body into buf.
func ReadInto(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, limit int64) error {
	if r.ContentLength > limit {
		return &http.MaxBytesError{Limit: limit}
	}
	// ReadFrom grows by doubling and keeps room for more: a body of the
	// declared size read that way would hold twice its size. Sized up
	// front (the length is within the limit here), it holds what it reads.
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead) // ReadFrom wants MinRead free to see EOF
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	return err
}
