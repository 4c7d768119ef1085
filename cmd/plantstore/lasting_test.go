package main

// Black-box tests of the answers that last as long as their client wants
// (the change feed's streams and long polls, the bulk import) and of what
// they may hold of the server. docs/threat-model.md names them.

import (
	"bufio"
	"context"
	"fmt"
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

// TestOneTokenCannotHoldEverySlot: one token holds as many change streams,
// long polls and trickling imports as it may, more than there are
// concurrent request slots; its next follower and import are refused (429,
// its share), another token's followers fill the rest up to the total
// (503 beyond), and meanwhile every ordinary request, of either token,
// finds a slot: the lasting answers hold none.
func TestOneTokenCannotHoldEverySlot(t *testing.T) {
	t.Parallel()
	const otherToken = "other-token-9876543210"
	cfg := testConfig(t)
	cfg.Auth = authConfig([]string{testToken, otherToken})
	l := &cfg.HTTP.Limits
	l.MaxConcurrentRequests = 4
	l.MaxFollowers, l.MaxFollowersPerCaller = 4, 3
	l.MaxImports, l.MaxImportsPerCaller = 3, 2
	s := startServer(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := &http.Client{Transport: s.Client.Transport} // no timeout: the streams last until ctx ends

	open := func(token, path string, header http.Header, body io.Reader) *http.Response {
		t.Helper()
		method := http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
		req, err := http.NewRequestWithContext(ctx, method, s.API+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header.Clone()
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		return resp
	}
	sse := http.Header{"Accept": {"text/event-stream"}}
	lasting := func(kind string) float64 {
		return s.metric(t, `plantstore_http_lasting_requests{kind="`+kind+`"}`)
	}

	// Two imports that trickle: a line sent, its result read, the body
	// left open. (First: their creates would answer a long poll.)
	for i := range 2 {
		pr, pw := io.Pipe()
		t.Cleanup(func() { _ = pw.Close() })
		// The answer's headers come with the first result: the line is
		// sent while open waits for them (a failed write shows as no result).
		go func() { _, _ = fmt.Fprintf(pw, "{\"id\":%d,\"name\":\"trickled\"}\n", 100+i) }()
		resp := open(testToken, "/plants:import", http.Header{"Content-Type": {"application/x-ndjson"}}, pr)
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if want := fmt.Sprintf("{\"line\":1,\"id\":%d,\"result\":\"created\"}\n", 100+i); err != nil || line != want {
			t.Fatalf("import %d's first result: %q, %v; want %q", i, line, err, want)
		}
	}
	if got := lasting("import"); got != 2 {
		t.Fatalf("imports open: %v, want 2", got)
	}

	// Two streams (open once their headers come) and a long poll, which
	// answers nothing until a change: the metric says when it waits.
	open(testToken, "/plants/changes", sse, nil)
	open(testToken, "/plants/changes", sse, nil)
	head := emptyCursor(t, s)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.API+"/plants/changes?wait=60s&after="+head, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	eventually(t, hangGuard, "three followers open", func() bool { return lasting("follow") == 3 })

	// The token's next follower and import are over its share.
	r := s.do(t, s.request(t, http.MethodGet, "/plants/changes?wait=60s", testToken, "", nil))
	assertErrorMessage(t, r, http.StatusTooManyRequests, "this token has 3 change streams and long polls open, as many as one token may; end one first")
	if r.Header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.Header.Get("Retry-After"))
	}
	r = s.do(t, s.request(t, http.MethodGet, "/plants/changes", testToken, "", nil))
	if r.Status != http.StatusOK { // a page that does not wait is an ordinary request
		t.Fatalf("a page without wait: %d %s", r.Status, r.Body)
	}
	r = s.do(t, s.request(t, http.MethodPost, "/plants:import", testToken, "application/x-ndjson", []byte(`{"id":1,"name":"a"}`+"\n")))
	assertErrorMessage(t, r, http.StatusTooManyRequests, "this token has 2 import streams open, as many as one token may; end one first")

	// Ordinary requests of both tokens find slots, more than the cap's
	// worth one after the other.
	for i := range 2 * l.MaxConcurrentRequests {
		token := []string{testToken, otherToken}[i%2]
		if r := s.do(t, s.request(t, http.MethodGet, "/plants/100", token, "", nil)); r.Status != http.StatusOK {
			t.Fatalf("GET %d with another request's token while the followers and imports are open: %d %s", i, r.Status, r.Body)
		}
	}
	if got := s.metric(t, "plantstore_http_concurrent_requests"); got != 0 {
		t.Fatalf("slots in use with only lasting answers open: %v, want 0", got)
	}

	// Another token's follower takes the last place; the next is over the
	// total.
	open(otherToken, "/plants/changes", sse, nil)
	r = s.do(t, s.request(t, http.MethodGet, "/plants/changes", otherToken, "", nil).WithContext(ctx))
	if r.Status != http.StatusOK {
		t.Fatalf("another token's page: %d", r.Status)
	}
	req := s.request(t, http.MethodGet, "/plants/changes", otherToken, "", nil)
	req.Header.Set("Accept", "text/event-stream")
	r = s.do(t, req)
	assertErrorMessage(t, r, http.StatusServiceUnavailable, "the server has 4 change streams and long polls open, as many as it serves at once; retry later")
	if got := s.metric(t, `plantstore_http_lasting_refused_total{kind="follow",reason="caller"}`); got != 1 {
		t.Fatalf("followers refused over the token's share: %v, want 1", got)
	}
}

// emptyCursor is the head of the change log, where a long poll waits.
func emptyCursor(t *testing.T, s *testServer) string {
	t.Helper()
	r := s.get(t, "/plants/changes")
	var page struct{ Next string }
	r.JSON(t, &page)
	return page.Next
}
