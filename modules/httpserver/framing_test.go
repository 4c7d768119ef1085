package httpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// framingServers runs both listeners: the API answers "ok:" and the body
// it read, behind RefuseAmbiguousFraming, as the API chain has it; the
// admin listener is the real admin handler.
func framingServers(t *testing.T) *Servers {
	t.Helper()
	ready := NewReadiness(nil, zap.NewNop())
	api := RefuseAmbiguousFraming(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = w.Write([]byte("ok:" + r.Method + " " + r.URL.Path + ":" + string(body)))
	}))
	s := NewServers(Config{
		Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ShutdownTimeout: 10 * time.Second,
	}, api, NewAdminHandler(ready, nil), ready, zap.NewNop())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

// rawConn is a client connection that writes bytes as given and reads
// answers with net/http's parser.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr net.Addr) *rawConn {
	t.Helper()
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// A guard against a hang, not a measure: every read here ends long before.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// answer reads one answer: its status, whether it said Connection: close
// (net/http's reader takes that header out into Close), and its body.
func (c *rawConn) answer(t *testing.T) (status int, closes bool, body string) {
	t.Helper()
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("reading an answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Close, string(b)
}

// closed asserts that the server closed the connection: the next read
// finds its end, not more bytes.
func (c *rawConn) closed(t *testing.T) {
	t.Helper()
	if n, err := c.r.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the answer: read %d bytes, %v; want the connection closed (EOF)", n, err)
	}
}

const ambiguousAnswer = `{"error":400,"message":"the request has both Transfer-Encoding and Content-Length (or Transfer-Encoding in HTTP/1.0): its end is ambiguous"}`

// TestAmbiguousFramingClosesTheConnection: a request with both
// Transfer-Encoding and Content-Length, or with Transfer-Encoding in
// HTTP/1.0, is answered 400 with Connection: close on both listeners, and
// the connection is closed: what a proxy may have taken for the body is
// never read as a next request.
func TestAmbiguousFramingClosesTheConnection(t *testing.T) {
	s := framingServers(t)
	// The chunked body ends after "0\r\n\r\n"; by Content-Length it holds
	// a second request, the smuggled one.
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	body := "0\r\n\r\n" + smuggled
	for _, tc := range []struct {
		name, head string
	}{
		{"Transfer-Encoding and Content-Length", "POST /plants HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n"},
		{"Content-Length first, other case", "POST /plants HTTP/1.1\r\nHost: x\r\ncontent-length: " + itoa(len(body)) + "\r\nTRANSFER-ENCODING: chunked\r\n\r\n"},
		{"Transfer-Encoding in HTTP/1.0", "POST /plants HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"},
	} {
		for _, listener := range []struct {
			name string
			addr net.Addr
		}{{"api", s.APIAddr()}, {"admin", s.AdminAddr()}} {
			t.Run(tc.name+"/"+listener.name, func(t *testing.T) {
				c := dialRaw(t, listener.addr)
				if _, err := io.WriteString(c, tc.head+body); err != nil {
					t.Fatal(err)
				}
				status, closes, answer := c.answer(t)
				if status != http.StatusBadRequest || !closes || answer != ambiguousAnswer {
					t.Fatalf("answer = %d, Connection: close %v, %s; want 400, close, %s", status, closes, answer, ambiguousAnswer)
				}
				c.closed(t)
			})
		}
	}
}

// TestFramingFollowsBodies: on one kept-alive connection, requests whose
// bodies hold what looks like an ambiguous head (chunked, and by length)
// are served as the bodies they are, and only the truly ambiguous request
// after them is refused; an OPTIONS * (which net/http answers itself) does
// not shift the count, and a chunked request with a long target is
// HTTP/1.1 still.
func TestFramingFollowsBodies(t *testing.T) {
	s := framingServers(t)
	c := dialRaw(t, s.APIAddr())
	decoy := "GET /decoy HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
	chunked := "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"10;ext=1\r\n" + decoy[:16] + "\r\n" + itoaHex(len(decoy)-16) + "\r\n" + decoy[16:] + "\r\n0\r\nTrailer-Field: x\r\n\r\n"
	sized := "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(decoy)) + "\r\n\r\n" + decoy
	options := "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"
	plain := "GET /c HTTP/1.1\r\nHost: x\r\n\r\n"
	longTarget := "/" + strings.Repeat("p", 300)
	longChunked := "POST " + longTarget + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
	ambiguous := "POST /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"
	// Sent in pieces of 7 bytes, so that no head arrives whole.
	all := chunked + sized + options + plain + longChunked + ambiguous
	go func() {
		for i := 0; i < len(all); i += 7 {
			if _, err := io.WriteString(c, all[i:min(i+7, len(all))]); err != nil {
				return
			}
		}
	}()
	for _, want := range []struct {
		status int
		body   string
	}{
		{200, "ok:POST /a:" + decoy},
		{200, "ok:POST /b:" + decoy},
		{200, ""}, // OPTIONS *
		{200, "ok:GET /c:"},
		{200, "ok:POST " + longTarget + ":abc"}, // a request line longer than the scanner keeps
	} {
		status, closes, body := c.answer(t)
		if status != want.status || closes || body != want.body {
			t.Fatalf("answer = %d, Connection: close %v, %q; want %d kept open, %q", status, closes, body, want.status, want.body)
		}
	}
	status, closes, body := c.answer(t)
	if status != http.StatusBadRequest || !closes || body != ambiguousAnswer {
		t.Fatalf("answer to the ambiguous request = %d, Connection: close %v, %s", status, closes, body)
	}
	c.closed(t)
}

func itoa(n int) string { return strconv.Itoa(n) }

func itoaHex(n int) string { return strconv.FormatInt(int64(n), 16) }

// BenchmarkFramingScanner is the scanner's cost for a create's request,
// fed as net/http reads it.
func BenchmarkFramingScanner(b *testing.B) {
	req := []byte("POST /plants HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bench\r\nAuthorization: Bearer bench-token\r\n" +
		"Content-Type: application/json\r\nContent-Length: 43\r\nAccept: */*\r\n\r\n" + `{"id":1,"name":"Monstera","tag":"tropical"}`)
	var s framingScanner
	var rec framingRecord
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		s.feed(req, &rec)
	}
	if rec.ambiguousAt.Load() != 0 || rec.lostAt.Load() != 0 || s.state != inHead || s.cut {
		b.Fatalf("scanner state %d, record %d %d", s.state, rec.ambiguousAt.Load(), rec.lostAt.Load())
	}
}

// TestFramingLostClosesAfterTheAnswer: a head the scanner cannot follow
// as net/http does (here a Content-Length that net/http takes, padded past
// what the scanner reads of a line) is served, but its connection is
// closed after the answer rather than kept on a guess.
func TestFramingLostClosesAfterTheAnswer(t *testing.T) {
	s := framingServers(t)
	c := dialRaw(t, s.APIAddr())
	req := "POST /e HTTP/1.1\r\nHost: x\r\nContent-Length:" + strings.Repeat(" ", 300) + "3\r\n\r\nabc"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	status, closes, body := c.answer(t)
	if status != http.StatusOK || !closes || body != "ok:POST /e:abc" {
		t.Fatalf("answer = %d, Connection: close %v, %q; want 200, close, %q", status, closes, body, "ok:POST /e:abc")
	}
	c.closed(t)
}

// TestAmbiguousOptionsStarEndsTheConnection: net/http answers "OPTIONS *"
// itself, without a handler that could close the connection; when its
// framing is ambiguous the connection ends with its head, so what its
// Content-Length would add is never served as a request.
func TestAmbiguousOptionsStarEndsTheConnection(t *testing.T) {
	s := framingServers(t)
	for _, addr := range []net.Addr{s.APIAddr(), s.AdminAddr()} {
		c := dialRaw(t, addr)
		smuggled := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
		body := "0\r\n\r\n" + smuggled
		req := "OPTIONS * HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		if status, _, body := c.answer(t); status != http.StatusOK || body != "" {
			t.Fatalf("OPTIONS * = %d %q, want net/http's 200", status, body)
		}
		c.closed(t)
	}
}
