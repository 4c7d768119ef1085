package main

// Black-box tests of the answers that last as long as their client wants
// (the change feed's streams and long polls, the bulk import) and of what
// they may hold of the server. docs/threat-model.md names them.

import (
	"bufio"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestHeadOfTheChangeStreamEnds: HEAD /plants/changes with Accept:
// text/event-stream answers the stream's headers and ends: the next
// request on its connection is answered, and with a cap of 2 concurrent
// requests two such HEADs, their connections kept, leave a slot for
// another client's GET.
func TestHeadOfTheChangeStreamEnds(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTP.Limits.MaxConcurrentRequests = 2
	s := startServer(t, cfg)
	for range 2 {
		conn := s.dial(t)
		_ = conn.SetDeadline(time.Now().Add(hangGuard))
		br := bufio.NewReader(conn)
		if _, err := io.WriteString(conn, "HEAD /plants/changes HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer "+testToken+
			"\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("HEAD of the stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if _, err := io.WriteString(conn, "GET /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer "+testToken+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the GET after the HEAD on its connection: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "[]" {
			t.Fatalf("the GET after the HEAD on its connection: %d %s", resp.StatusCode, body)
		}
	}
	if r := s.get(t, "/plants"); r.Status != http.StatusOK || string(r.Body) != "[]" {
		t.Fatalf("another client's GET after two HEADs, cap 2: %d %s", r.Status, r.Body)
	}
}
