package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The admin listener reads at most a few KiB of any body (issue 13: a
// 200 MB PUT /loglevel took the process to 1.5 GB and was echoed back),
// and /loglevel takes only the levels --log-level takes: panic or fatal
// would silence the access log. Run on the real binary, whose output shows
// the access log still working afterwards.
func TestAdminBodiesAreCappedAndLogLevelIsChecked(t *testing.T) {
	p := startProcess(t, "PLANTSTORE_LOG_LEVEL=info")

	const tooLarge = `{"error":413,"message":"request body is larger than the limit of 4096 bytes"}`
	huge := `{"level":"debug","padding":"` + strings.Repeat("x", 8<<20) + `"}`
	for _, tc := range []struct {
		name, method, path string
		chunked            bool
	}{
		{"declared", http.MethodPut, "/loglevel", false},
		{"chunked", http.MethodPut, "/loglevel", true},
		{"to a GET route", http.MethodGet, "/livez", false},
		{"to an unknown path", http.MethodPost, "/nope", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(huge)
			if tc.chunked {
				body = struct{ io.Reader }{body} // no length known: sent chunked
			}
			assertAdminAnswer(t, adminCall(t, p.Admin, tc.method, tc.path, "application/json", body),
				http.StatusRequestEntityTooLarge, tooLarge)
		})
	}
	// One byte over the cap is refused too, and a body at it is read.
	padded := func(size int) string {
		prefix, suffix := `{"level":"info"`, `}`
		return prefix + strings.Repeat(" ", size-len(prefix)-len(suffix)) + suffix
	}
	assertAdminAnswer(t, adminPut(t, p.Admin, padded(4097)), http.StatusRequestEntityTooLarge, tooLarge)
	assertAdminAnswer(t, adminPut(t, p.Admin, padded(4096)), http.StatusOK, `{"level":"info"}`)

	// Levels --log-level refuses, and bodies that are not {"level": ...}:
	// fixed messages, never the client's input.
	const badLevel = `{"error":400,"message":"level: want debug, info, warn or error"}`
	const badBody = `{"error":400,"message":"request body must be a JSON object {\"level\": \"<level>\"} and nothing else"}`
	for body, want := range map[string]string{
		`{"level":"panic"}`:           badLevel,
		`{"level":"fatal"}`:           badLevel,
		`{"level":"dpanic"}`:          badLevel,
		`{"level":"DEBUG"}`:           badLevel,
		`{"level":"<b>loud</b>"}`:     badLevel,
		`{"level":3}`:                 badBody,
		`{}`:                          badBody,
		`{"level":"debug","x":1}`:     badBody,
		`{"level":"debug","level":1}`: badBody,
		`{"level":"debug"} trailing`:  badBody,
		"level=debug":                 badBody,
	} {
		assertAdminAnswer(t, adminPut(t, p.Admin, body), http.StatusBadRequest, want)
	}
	assertAdminAnswer(t, adminCall(t, p.Admin, http.MethodPut, "/loglevel", "application/x-www-form-urlencoded", strings.NewReader("level=debug")),
		http.StatusUnsupportedMediaType, `{"error":415,"message":"Content-Type must be application/json"}`)

	// Nothing refused changed the level, and the access log still writes.
	assertAdminAnswer(t, adminCall(t, p.Admin, http.MethodGet, "/loglevel", "", nil), http.StatusOK, `{"level":"info"}`)
	req, err := http.NewRequest(http.MethodGet, p.API+"/plants", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("X-Request-ID", "after-the-admin-probes")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if code := p.Signal(t, syscall.SIGTERM, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Output())
	}
	access := accessLines(t, p.Output())
	if len(access) != 1 || access[0]["request_id"] != "after-the-admin-probes" || access[0]["status"] != float64(200) {
		t.Fatalf("access lines %v, want one, of the GET /plants with status 200", access)
	}
}

// A body declared over the admin cap is refused at once, and its wait is
// bounded as the API's is (TestRefusedBodiesAreNotAwaited): a client that
// declares a body and withholds it is cut off after the grace, one that
// sends it keeps its connection.
func TestAdminRefusedBodyIsNotAwaited(t *testing.T) {
	t.Parallel() // a server of its own; the test mostly waits out the server's timeouts
	cfg := testConfig(t)
	cfg.HTTP.Limits.ReadTimeout = 10 * time.Minute // far past the hang guard: only the grace can end a withheld body
	s := startServer(t, cfg)
	const declared = 10000 // over the admin cap, under net/http's 256 KiB discard
	head := fmt.Sprintf("PUT /loglevel HTTP/1.1\r\nHost: plantstore\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", declared)
	const tooLarge = `{"error":413,"message":"request body is larger than the limit of 4096 bytes"}`
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.Admin, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if err := conn.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
			t.Fatal(err)
		}
		return conn, bufio.NewReader(conn)
	}
	read := func(t *testing.T, br *bufio.Reader) (*http.Response, string) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}

	t.Run("body withheld", func(t *testing.T) {
		conn, br := dial(t)
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		if resp, body := read(t, br); resp.StatusCode != http.StatusRequestEntityTooLarge || body != tooLarge || !resp.Close {
			t.Fatalf("answer %d %s, Connection: close %v; want 413 %s and close", resp.StatusCode, body, resp.Close, tooLarge)
		}
		if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
			t.Fatalf("after the answer: %q, %v; want the connection closed", rest, err)
		}
	})
	t.Run("body sent", func(t *testing.T) {
		conn, br := dial(t)
		for i := range 2 { // the second request reuses the connection
			if _, err := io.WriteString(conn, head+strings.Repeat(" ", declared)); err != nil {
				t.Fatal(err)
			}
			if resp, body := read(t, br); resp.StatusCode != http.StatusRequestEntityTooLarge || body != tooLarge || resp.Close {
				t.Fatalf("request %d: answer %d %s, Connection: close %v; want 413 %s on a kept connection",
					i+1, resp.StatusCode, body, resp.Close, tooLarge)
			}
		}
	})
}

func adminPut(t *testing.T, admin, body string) response {
	t.Helper()
	return adminCall(t, admin, http.MethodPut, "/loglevel", "application/json", strings.NewReader(body))
}

// adminCall sends one request to the admin listener and reads the answer whole.
func adminCall(t *testing.T, admin, method, path, contentType string, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(method, admin+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: got}
}

// assertAdminAnswer checks the exact status, body and JSON content type.
func assertAdminAnswer(t *testing.T, r response, status int, body string) {
	t.Helper()
	if r.Status != status || string(r.Body) != body {
		t.Errorf("answer %d %.200s, want %d %s", r.Status, r.Body, status, body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
}
