package httpserver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// Reading bodies before the concurrency cap: a request that took one of the
// --max-concurrent-requests slots before its body arrived would hold it for
// as long as the client takes to send the body (up to --read-timeout), so
// --max-concurrent-requests slow bodies with a valid token would hold every
// slot. The chain therefore reads the body of a route that declares one
// (httpapi.ReadsBody) just before the cap, and the handler takes the bytes
// from httpapi.ReadBody instead of reading them itself: one read, into one
// buffer.
//
// The price: bodies being read are no longer bounded by the slots but by
// the connections, so the memory they can take at once is
// --max-connections × --max-body-bytes at worst; but only for clients with
// a valid token (auth and the rate limit come first), and only as fast as
// they send.

// bodyAhead is a body read ahead, and the error that ended the read.
type bodyAhead struct {
	buf    bytes.Buffer
	err    error
	reader bytes.Reader // for handlers that read r.Body as a stream
}

func (b *bodyAhead) Read(p []byte) (int, error) {
	n, err := b.reader.Read(p)
	if errors.Is(err, io.EOF) && b.err != nil {
		return n, b.err
	}
	return n, err
}

func (b *bodyAhead) Close() error { return nil }

// Ahead implements httpapi.BodyAhead: httpapi.ReadBody hands these bytes to
// the handler.
func (b *bodyAhead) Ahead() ([]byte, error) { return b.buf.Bytes(), b.err }

// bodiesAhead recycles the buffers: the create path then allocates no more
// than when the handler read the body itself.
var bodiesAhead = sync.Pool{New: func() any { return new(bodyAhead) }}

// maxPooledBody: a rare huge body should not pin its memory in the pool.
const maxPooledBody = 64 << 10

// readAhead is the chain's link that reads the body of an httpapi.ReadsBody route
// (see above). It answers nothing itself: a body over the limit or cut off
// is the handler's to answer, after its own checks (a 415 comes before a
// 413, as when the handler read the body).
func readAhead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := r.Context().Value(resolvedKey{}).(*resolved)
		if !ok || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		limit, ok := httpapi.BodyLimit(res.handler)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		ahead := bodiesAhead.Get().(*bodyAhead)
		ahead.buf.Reset()
		ahead.err = httpapi.ReadInto(w, r, &ahead.buf, limit)
		ahead.reader.Reset(ahead.buf.Bytes())
		// r is the chain's own copy (Resolve made it), not the server's
		// request, so its Body may change without another copy.
		body := r.Body
		r.Body = ahead
		next.ServeHTTP(w, r)
		r.Body = body // nothing may read the pooled buffer once it is put back
		ahead.err = nil
		if ahead.buf.Cap() <= maxPooledBody {
			bodiesAhead.Put(ahead)
		}
	})
}
