package plants

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// buffers recycles request and response buffers: the create path then
// allocates little beyond what the store keeps.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { b := buffers.Get().(*bytes.Buffer); b.Reset(); return b }

// readJSON reads the JSON body of a create or an update into a pooled
// buffer, which the caller puts back (putBuffer) once it is done with the
// body and the buffer. Not ok: the request is answered already (its
// headers' 415 or 400, the body's 413 or 400) and the buffer put back.
func (h *Handlers) readJSON(w http.ResponseWriter, r *http.Request) (body []byte, buf *bytes.Buffer, ok bool) {
	if !checkBodyHeaders(w, r, jsonContentType) {
		return nil, nil, false
	}
	buf = getBuffer()
	if body, ok = readBody(w, r, buf, h.maxBodyBytes); !ok {
		putBuffer(buf)
		return nil, nil, false
	}
	return body, buf, true
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 { // a rare huge body should not pin its memory in the pool
		buffers.Put(b)
	}
}

// readBody returns the body, at most limit bytes, read into buf unless the
// chain read it ahead (httpapi.ReadBody). Over the limit it answers 413
// and returns false; a body that declares its size too large is refused
// before a byte of it is read.
func readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, limit int64) ([]byte, bool) {
	body, err := httpapi.ReadBody(w, r, buf, limit)
	if err == nil {
		return body, true
	}
	var maxErr *http.MaxBytesError // it escapes: declared here, only a failed read allocates it
	switch {
	case errors.As(err, &maxErr):
		return nil, bodyTooLarge(w, limit)
	case errors.Is(err, io.ErrUnexpectedEOF):
		httperr.Write(w, http.StatusBadRequest, "request body ended before its declared length")
	default:
		httperr.Write(w, http.StatusBadRequest, "request body could not be read")
	}
	return nil, false
}

func bodyTooLarge(w http.ResponseWriter, limit int64) bool {
	httperr.Write(w, http.StatusRequestEntityTooLarge,
		"request body is larger than the limit of "+strconv.FormatInt(limit, 10)+" bytes")
	return false
}
