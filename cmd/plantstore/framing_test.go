package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestAmbiguousFramingOverTCP: through the real app, on both listeners, a
// request with both Transfer-Encoding and Content-Length is answered 400
// with the Error body and Connection: close, and the connection is closed:
// the bytes its Content-Length would add (a second request) are never
// served. Nothing of it reaches the store.
func TestAmbiguousFramingOverTCP(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	const want = `{"error":400,"message":"the request has both Transfer-Encoding and Content-Length (or Transfer-Encoding in HTTP/1.0): its end is ambiguous"}`
	smuggled := "DELETE /plants/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken + "\r\n\r\n"
	body := "1b\r\n" + `{"id":1,"name":"Smuggler"}` + "\r\n0\r\n\r\n" + smuggled
	for _, base := range []string{s.API, s.Admin} {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(u.Host, func(t *testing.T) {
			c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a guard against a hang, not a measure
			req := "POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testToken +
				"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: " +
				strconv.Itoa(len(body)) + "\r\n\r\n" + body
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(c)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			// net/http's reader turns the Connection: close header into Close.
			if resp.StatusCode != http.StatusBadRequest || !resp.Close || string(got) != want ||
				resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("answer = %d, Connection: close %v, %s %s; want 400, close, application/json %s",
					resp.StatusCode, resp.Close, resp.Header.Get("Content-Type"), got, want)
			}
			if n, err := r.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("after the answer: read %d bytes, %v; want the connection closed (EOF)", n, err)
			}
		})
	}
	if _, err := s.Store.Get(t.Context(), 1); err == nil {
		t.Fatal("the ambiguous request's body was stored")
	}
}
