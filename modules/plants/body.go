package plants

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// buffers recycles request and response buffers: the create path then
// allocates little beyond what the store keeps.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { b := buffers.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 { // a rare huge body should not pin its memory in the pool
		buffers.Put(b)
	}
}

// checkJSONContentType answers 415 and returns false unless the request
// declares application/json (parameters such as charset are allowed).
func checkJSONContentType(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "application/json" {
		return true
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return true
	}
	msg := "Content-Type must be application/json"
	if ct == "" {
		msg += "; the request has none"
	} else {
		msg += ", not " + strconv.Quote(ct)
	}
	httperr.Write(w, http.StatusUnsupportedMediaType, msg)
	return false
}

// readBody reads at most limit bytes of the body into buf. Over the limit it
// answers 413 and returns false; a body that declares its size too large is
// refused before a byte of it is read.
func readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, limit int64) bool {
	if r.ContentLength > limit {
		return bodyTooLarge(w, limit)
	}
	// ReadFrom grows by doubling and keeps room for more: a body of the
	// declared size read that way would hold twice its size. Sized up
	// front (the length is within the limit here), it holds what it reads.
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead) // ReadFrom wants MinRead free to see EOF
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &maxErr):
		return bodyTooLarge(w, limit)
	case errors.Is(err, io.ErrUnexpectedEOF):
		httperr.Write(w, http.StatusBadRequest, "request body ended before its declared length")
	default:
		httperr.Write(w, http.StatusBadRequest, "request body could not be read")
	}
	return false
}

func bodyTooLarge(w http.ResponseWriter, limit int64) bool {
	httperr.Write(w, http.StatusRequestEntityTooLarge,
		"request body is larger than the limit of "+strconv.FormatInt(limit, 10)+" bytes")
	return false
}
