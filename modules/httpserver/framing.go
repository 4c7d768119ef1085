package httpserver

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// Ambiguous framing. A request with both Transfer-Encoding and
// Content-Length (or with Transfer-Encoding in HTTP/1.0) has two possible
// ends: a proxy in front may cut it by one and this server by the other, so
// that bytes the proxy took for a body are read here as a next request
// (request smuggling). net/http serves such a request by its
// Transfer-Encoding and keeps the connection, and it deletes the
// Content-Length header before any handler runs, so a handler cannot tell.
// framingConn therefore reads the request heads as they pass on the
// connection, ahead of net/http, and tells the handlers which request on
// it was ambiguous: that request is refused with 400 and the connection
// closed after the answer, on both listeners (an "OPTIONS *", which
// net/http answers without a handler, ends the connection with its head).
// A connection whose bytes it cannot follow (a framing it does not parse
// as net/http would) is closed after the next answer, never kept on a
// guess.

// framingListener wraps each accepted connection in a framingConn.
type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

// framingContext is the servers' ConnContext: it gives each request the
// framing record of its connection.
func framingContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framingConn); ok {
		return context.WithValue(ctx, framingKey{}, &fc.record)
	}
	return ctx
}

type framingKey struct{}

// framingRecord is what a connection's scanner learnt, for its handlers.
// Requests are numbered from 1 in the order they arrive on the connection.
type framingRecord struct {
	served      atomic.Int64 // the number of the request being served
	ambiguousAt atomic.Int64 // the first ambiguous request's number; 0: none
	lostAt      atomic.Int64 // from this request on, the framing is unknown; 0: never
}

// countRequests is the servers' outermost handler: it numbers the
// connection's requests as net/http serves them, and closes the
// connection after the answer to an ambiguous request (which
// RefuseAmbiguousFraming, further in, answers) or once the scanner lost
// the framing.
func countRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := r.Context().Value(framingKey{}).(*framingRecord); ok {
			n := rec.served.Add(1)
			if lost := rec.lostAt.Load(); n == rec.ambiguousAt.Load() || (lost != 0 && n >= lost) {
				w.Header().Set("Connection", "close")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// RefuseAmbiguousFraming answers a request whose framing is ambiguous with
// 400 and closes its connection after the answer; on the API it sits
// inside the telemetry links, so that the refusal is logged and counted.
func RefuseAmbiguousFraming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := r.Context().Value(framingKey{}).(*framingRecord); ok {
			if at := rec.ambiguousAt.Load(); at != 0 && at == rec.served.Load() {
				w.Header().Set("Connection", "close")
				httperr.Write(w, http.StatusBadRequest, "the request has both Transfer-Encoding and Content-Length (or Transfer-Encoding in HTTP/1.0): its end is ambiguous")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// framingConn follows the framing of the requests read from it.
type framingConn struct {
	net.Conn
	mu     sync.Mutex // net/http reads from two goroutines (its background read)
	scan   framingScanner
	record framingRecord
}

func (c *framingConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	cut := c.scan.cut
	c.mu.Unlock()
	if cut {
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		n = c.scan.feed(p[:n], &c.record)
		c.mu.Unlock()
	}
	return n, err
}

// CloseWrite half-closes when the connection can, as net/http does before
// closing after an answer, so that the client reads the answer rather than
// a reset.
func (c *framingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Lingering close. An answer given before the request's body was read (a
// 413 for a body over the limit, a 401, a 415) closes the connection while
// the client may still be sending. Closed with bytes unread, the
// connection is reset, and a client that sends its whole request before
// reading the answer (most do, and Go's client reports its failed write
// rather than the answer) never sees the answer: a reset can also drop the
// answer from the client's buffers. net/http only waits half a second
// before it closes. So a connection that closes in the middle of a
// request's body first reads and discards the rest of that body (RFC 9112
// §9.6), up to LingerMaxBytes, after a half-close that tells the client
// the answer is complete; then it closes. LingerIdle ends it when no byte
// comes for that long (a stalled client) and LingerFor in any case (a
// trickling one); a client still sending is not cut off by a fixed short
// bound, which a loaded machine or a slow link would turn into the reset
// this avoids. This happens in the background, so that the server's own
// goroutine for the connection (or its Close) never waits for it; the
// connection counts against --max-connections until it is closed.
const (
	LingerIdle     = 5 * time.Second
	LingerFor      = time.Minute
	LingerMaxBytes = 16 << 20
)

// Close closes the connection, lingering first when a request's body is
// unfinished (see above).
func (c *framingConn) Close() error {
	c.mu.Lock()
	mid := c.scan.inBody()
	c.mu.Unlock()
	if !mid {
		return c.Conn.Close()
	}
	go c.linger()
	return nil
}

// linger reads and drops the rest of the body being received, then closes.
func (c *framingConn) linger() {
	defer c.Conn.Close()
	_ = c.CloseWrite()
	end := time.Now().Add(LingerFor)
	buf := make([]byte, 32<<10)
	for read := 0; read < LingerMaxBytes; {
		deadline := time.Now().Add(LingerIdle)
		if deadline.After(end) {
			deadline = end
		}
		if c.SetReadDeadline(deadline) != nil {
			return
		}
		n, err := c.Conn.Read(buf)
		read += n
		c.mu.Lock()
		c.scan.feed(buf[:n], &c.record)
		mid := c.scan.inBody()
		c.mu.Unlock()
		if !mid || err != nil {
			return
		}
	}
}

// Scanner states.
const (
	inHead       = iota // request line and header fields
	inBody              // Content-Length bytes
	inChunkSize         // a chunk's size line
	inChunkData         // a chunk's bytes
	inChunkEnd          // the CRLF after a chunk's bytes
	inTrailer           // trailer fields after the last chunk
	stopped             // ambiguous or lost: nothing more is followed
	maxKeptLine  = 256  // the bytes of a line the scanner looks at
	maxChunkLine = 4096 // net/http's limit for a chunk-size line
)

// framingScanner follows request boundaries in the byte stream the way
// net/http cuts them: heads end at an empty line, a body is
// Content-Length bytes, or chunks when the request is HTTP/1.1 with
// Transfer-Encoding.
type framingScanner struct {
	state   int
	line    []byte   // the current line's first maxKeptLine bytes
	lineLen int      // its full length so far
	tail    [16]byte // its last bytes (a request line ends with its version)
	tailLen int
	remain  int64 // body or chunk bytes still to pass; 2 for inChunkEnd
	heads   int64 // request heads seen that net/http hands to a handler
	cut     bool  // the connection ends after the bytes fed so far

	// the head being read
	sawRequestLine bool
	http11         bool
	counted        bool // net/http serves it through the handler
	contentLength  int64
	hasCL, hasTE   bool
	clBad          bool
	lastField      string // "content-length", "transfer-encoding" or "": continuation lines join it
}

// feed follows p and says how many of its bytes net/http may read: all,
// unless the connection is cut after an ambiguous head no handler sees.
func (s *framingScanner) feed(p []byte, rec *framingRecord) int {
	total := len(p)
	for len(p) > 0 && s.state != stopped {
		switch s.state {
		case inBody, inChunkData:
			n := min(int64(len(p)), s.remain)
			s.remain -= n
			p = p[n:]
			if s.remain == 0 {
				if s.state == inBody {
					s.state = inHead
				} else {
					s.state, s.remain = inChunkEnd, 2
				}
			}
		case inChunkEnd:
			want := byte('\r')
			if s.remain == 1 {
				want = '\n'
			}
			if p[0] != want {
				s.lose(rec)
				return total
			}
			p = p[1:]
			if s.remain--; s.remain == 0 {
				s.state = inChunkSize
			}
		default: // the line-based states
			i := bytes.IndexByte(p, '\n')
			chunk := p
			if i >= 0 {
				chunk = p[:i]
			}
			if keep := maxKeptLine - len(s.line); keep > 0 {
				s.line = append(s.line, chunk[:min(keep, len(chunk))]...)
			}
			if s.state == inHead && !s.sawRequestLine {
				s.keepTail(chunk)
			}
			s.lineLen += len(chunk)
			if i < 0 {
				if s.state == inChunkSize && s.lineLen > maxChunkLine {
					s.lose(rec)
				}
				return total
			}
			p = p[i+1:]
			line := bytes.TrimSuffix(s.line, []byte{'\r'})
			long := s.lineLen > maxKeptLine
			tail := bytes.TrimSuffix(s.tail[:s.tailLen], []byte{'\r'})
			s.line, s.lineLen, s.tailLen = s.line[:0], 0, 0
			s.endLine(line, tail, long, rec)
			if s.cut {
				return total - len(p)
			}
		}
	}
	return total
}

// keepTail keeps the last bytes of the line read so far.
func (s *framingScanner) keepTail(chunk []byte) {
	if len(chunk) >= len(s.tail) {
		s.tailLen = copy(s.tail[:], chunk[len(chunk)-len(s.tail):])
		return
	}
	if over := s.tailLen + len(chunk) - len(s.tail); over > 0 {
		copy(s.tail[:], s.tail[over:s.tailLen])
		s.tailLen -= over
	}
	s.tailLen += copy(s.tail[s.tailLen:], chunk)
}

// endLine handles one complete line: its first maxKeptLine bytes (long
// says it had more) and its last bytes.
func (s *framingScanner) endLine(line, tail []byte, long bool, rec *framingRecord) {
	switch s.state {
	case inChunkSize:
		if long {
			s.lose(rec)
			return
		}
		if semi := bytes.IndexByte(line, ';'); semi >= 0 {
			line = line[:semi]
		}
		size, ok := parseNumber(bytes.TrimRight(line, " \t"), 16)
		if !ok {
			s.lose(rec)
			return
		}
		if size == 0 {
			s.state = inTrailer
			return
		}
		s.state, s.remain = inChunkData, size
	case inTrailer:
		if len(line) == 0 {
			s.state = inHead
		}
	case inHead:
		s.headLine(line, tail, long, rec)
	}
}

// headLine handles a line of a request head.
func (s *framingScanner) headLine(line, tail []byte, long bool, rec *framingRecord) {
	if !s.sawRequestLine {
		if len(line) == 0 {
			return // net/http skips the empty lines some clients send between requests
		}
		s.sawRequestLine = true
		s.http11 = bytes.HasSuffix(tail, []byte(" HTTP/1.1")) // the target may be longer than the line kept
		// net/http answers "OPTIONS *" itself, without a handler.
		s.counted = !bytes.HasPrefix(line, []byte("OPTIONS * "))
		return
	}
	if len(line) == 0 {
		s.endHead(rec)
		return
	}
	if line[0] == ' ' || line[0] == '\t' { // a continuation of the field above
		if s.lastField != "" && long {
			s.lose(rec)
		}
		if s.lastField == "content-length" {
			s.clBad = true // net/http joins it into a value it refuses
		}
		return
	}
	name, value, ok := bytes.Cut(line, []byte{':'})
	s.lastField = ""
	if !ok {
		return // net/http refuses the request and closes the connection
	}
	switch {
	case asciiEqualFold(name, "content-length"):
		s.lastField = "content-length"
		if long {
			s.lose(rec)
			return
		}
		n, ok := parseNumber(bytes.Trim(value, " \t"), 10)
		if !ok || (s.hasCL && n != s.contentLength) {
			s.clBad = true
		}
		s.hasCL, s.contentLength = true, n
	case asciiEqualFold(name, "transfer-encoding"):
		s.lastField = "transfer-encoding"
		s.hasTE = true
	}
}

// endHead decides where the head's request ends.
func (s *framingScanner) endHead(rec *framingRecord) {
	if s.counted {
		s.heads++
	}
	hasTE, hasCL, http11, clBad, n, counted := s.hasTE, s.hasCL, s.http11, s.clBad, s.contentLength, s.counted
	s.sawRequestLine, s.http11, s.counted, s.hasCL, s.hasTE, s.clBad, s.contentLength, s.lastField = false, false, false, false, false, false, 0, ""
	switch {
	case hasTE && (hasCL || !http11) && !counted:
		// net/http answers this one itself ("OPTIONS *"), so no handler
		// can close the connection: it ends with this head instead, and
		// what follows is never read.
		s.state, s.cut = stopped, true
	case hasTE && (hasCL || !http11):
		rec.ambiguousAt.CompareAndSwap(0, s.heads)
		s.state = stopped // the connection closes after this request's answer
	case hasTE:
		s.state = inChunkSize
	case clBad:
		s.lose(rec) // net/http refuses it; should it not, nothing here is certain
	case hasCL && n > 0:
		s.state, s.remain = inBody, n
	}
}

// inBody reports whether the scanner is inside a request's body: bytes
// of it are still to come.
func (s *framingScanner) inBody() bool {
	switch s.state {
	case inBody, inChunkSize, inChunkData, inChunkEnd, inTrailer:
		return true
	}
	return false
}

// lose gives up following the connection: from the next request on, each
// answer closes it.
func (s *framingScanner) lose(rec *framingRecord) {
	rec.lostAt.CompareAndSwap(0, s.heads+1)
	s.state = stopped
}

// parseNumber reads digits of base 10 or 16 (no sign, no spaces), without
// allocating; ok is false for anything else, or a value over 2⁶⁰.
func parseNumber(b []byte, base int64) (n int64, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		var d int64
		switch {
		case '0' <= c && c <= '9':
			d = int64(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = int64(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = int64(c-'A') + 10
		default:
			return 0, false
		}
		if n = n*base + d; n > 1<<60 {
			return 0, false
		}
	}
	return n, true
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
