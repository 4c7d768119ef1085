package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUnsupportedHTTPVersion pins what the README lists among net/http's own
// answers: a request line with a version other than HTTP/1.x is a text/plain
// 505 written before any of the service's code runs (no Error body).
func TestUnsupportedHTTPVersion(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	for _, version := range []string{"HTTP/2.0", "HTTP/3.0", "HTTP/0.9"} {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.API, "http://"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = io.WriteString(conn, "GET /plants "+version+"\r\nHost: plantstore\r\nAuthorization: Bearer "+testToken+"\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = conn.Close()
		if resp.StatusCode != http.StatusHTTPVersionNotSupported || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("%s: answered %d %q %s, want 505 text/plain", version, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}
