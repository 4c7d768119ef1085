package main

// Connections and slow bodies against the real binary under a small file
// limit (prlimit), so that running out of file descriptors takes a few
// hundred connections, not tens of thousands. docs/threat-model.md quotes
// the figures these tests log.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testFileLimit is the children's RLIMIT_NOFILE, soft and hard: Go raises
// the soft limit to the hard one at start, so the hard one must be low.
const testFileLimit = 256

// startUnderFileLimit runs the binary under prlimit with testFileLimit and
// returns it as a testServer (no store access) and as a process.
func startUnderFileLimit(t *testing.T, env ...string) (*testServer, *process) {
	t.Helper()
	prlimit := requireProgram(t, "prlimit", "apt-get install util-linux")
	limit := strconv.Itoa(testFileLimit)
	cmd := exec.Command(prlimit, "--nofile="+limit+":"+limit, buildBinary(t))
	p := startCommand(t, cmd, env...)
	client := &http.Client{Timeout: hangGuard, Transport: &http.Transport{DisableKeepAlives: true}}
	return &testServer{API: p.API, Admin: p.Admin, Client: client}, p
}

// sendRequest writes a GET /plants with token on conn.
func sendRequest(t *testing.T, conn net.Conn, token string) {
	t.Helper()
	if _, err := fmt.Fprintf(conn, "GET /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\n\r\n", token); err != nil {
		t.Error(err)
	}
}

// readAnswer reads one answer from br, whole, and whether it carries
// Connection: close (which http.ReadResponse moves out of the headers).
func readAnswer(conn net.Conn, br *bufio.Reader) (r response, closes bool, err error) {
	if err := conn.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
		return r, false, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return r, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}, resp.Close, err
}

// dialAPI opens a raw connection to the API, closed when the test ends.
// It does not fail the test itself, so that goroutines may call it.
func dialAPI(t *testing.T, s *testServer) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.API, "http://"), hangGuard)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close() })
	}
	return conn, err
}

// procFigures are the child's open files and resident memory, for the
// threat model's figures.
func procFigures(t *testing.T, p *process) string {
	t.Helper()
	pid := p.Cmd.Process.Pid
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return "no /proc: " + err.Error()
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	rss := "?"
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
	}
	return fmt.Sprintf("%d open files, RSS %s", len(fds), rss)
}

// TestIdleConnectionsAreCapped: under a file limit of 256, the API listener
// holds at most 128 connections (256 − the reserve of 128). A bad token's
// 401 closes its connection, even when more such clients come at once than
// the process has files. Connections kept open with a valid token fill the
// cap; more wait in the kernel's accept queue, while /livez and /readyz
// keep answering, and are served as soon as others close. The process never
// runs out of files.
func TestIdleConnectionsAreCapped(t *testing.T) {
	s, p := startUnderFileLimit(t)
	const capacity = testFileLimit - 128
	if got := s.metric(t, "plantstore_http_max_connections"); got != capacity {
		t.Fatalf("plantstore_http_max_connections = %v, want %d under a file limit of %d", got, capacity, testFileLimit)
	}

	// More bad-token clients at once than the process has files: each is
	// answered 401 and its connection closed by the server.
	const badClients = testFileLimit + 100
	var wg sync.WaitGroup
	for i := range badClients {
		wg.Go(func() {
			conn, err := dialAPI(t, s)
			if err != nil {
				t.Errorf("bad-token client %d: %v", i, err)
				return
			}
			sendRequest(t, conn, "bad-token")
			br := bufio.NewReader(conn)
			r, closes, err := readAnswer(conn, br)
			var body struct {
				Error   int
				Message string
			}
			if err != nil || r.Status != http.StatusUnauthorized || !closes ||
				json.Unmarshal(r.Body, &body) != nil || body.Error != http.StatusUnauthorized {
				t.Errorf("bad-token client %d: %d (Connection: close %v) %s, %v; want 401 with Connection: close", i, r.Status, closes, r.Body, err)
				return
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
				t.Errorf("bad-token client %d after its 401: %q, %v; want the connection closed by the server", i, rest, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Valid clients that keep their connections open fill the cap.
	kept := make([]net.Conn, capacity)
	for i := range kept {
		conn, err := dialAPI(t, s)
		if err != nil {
			t.Fatal(err)
		}
		sendRequest(t, conn, testToken)
		r, closes, err := readAnswer(conn, bufio.NewReader(conn))
		if err != nil || r.Status != http.StatusOK || closes {
			t.Fatalf("kept client %d: %d %s, %v; want 200 on a kept connection", i, r.Status, r.Body, err)
		}
		kept[i] = conn
	}
	// More valid clients than the process has files left: they wait.
	const waiting = testFileLimit - capacity + 50
	answers := make(chan error, waiting)
	for i := range waiting {
		go func() {
			conn, err := dialAPI(t, s)
			if err != nil {
				answers <- fmt.Errorf("waiting client %d: %w", i, err)
				return
			}
			sendRequest(t, conn, testToken)
			r, _, err := readAnswer(conn, bufio.NewReader(conn))
			_ = conn.Close() // making room for the next: a waiting client done with its connection
			if err == nil && r.Status != http.StatusOK {
				err = fmt.Errorf("status %d %s, want 200", r.Status, r.Body)
			}
			if err != nil {
				err = fmt.Errorf("waiting client %d: %w", i, err)
			}
			answers <- err
		}()
	}
	eventually(t, hangGuard, "the cap is full", func() bool {
		return s.metric(t, "plantstore_http_open_connections") >= capacity
	})
	// The probes answer while the API is full, and the cap holds.
	for _, path := range []string{"/livez", "/readyz"} {
		for range 5 {
			resp, err := s.Client.Get(s.Admin + path)
			if err != nil {
				t.Fatalf("%s while the API is full: %v", path, err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s while the API is full = %d, want 200", path, resp.StatusCode)
			}
		}
	}
	if got := s.metric(t, "plantstore_http_open_connections"); got != capacity {
		t.Fatalf("plantstore_http_open_connections = %v with %d clients connected, want the cap, %d", got, capacity+waiting, capacity)
	}
	t.Logf("full: %d connections held, %d waiting: %s", capacity, waiting, procFigures(t, p))

	// As the kept connections close, every waiting client is served.
	for _, conn := range kept {
		_ = conn.Close()
	}
	for range waiting {
		if err := <-answers; err != nil {
			t.Error(err)
		}
	}
	if out := p.Output(); strings.Contains(out, "too many open files") {
		t.Fatalf("the process ran out of files:\n%s", out)
	}
}

// TestSlowBodiesDoNotHoldTheSlots: with 4 request slots, creates whose
// bodies are still arriving, twice as many as the slots, hold none of
// them: a fast create gets its 200 meanwhile, and the slow ones get theirs
// when their bodies are in.
func TestSlowBodiesDoNotHoldTheSlots(t *testing.T) {
	const slots = 4
	s, _ := startUnderFileLimit(t, "PLANTSTORE_MAX_CONCURRENT_REQUESTS="+strconv.Itoa(slots))
	slow := make([]*heldCreate, 2*slots)
	for i := range slow {
		slow[i] = startHeldCreate(t, s, fmt.Sprintf(`{"id":%d,"name":"slow %d"}`, i, i))
	}
	// Every slow request is in the server, waiting for the rest of its body
	// (or was shed, when a slow body took a slot).
	eventually(t, hangGuard, "the slow requests reached the server", func() bool {
		return s.metric(t, "http_server_active_requests")+s.metric(t, "plantstore_http_shed_total") >= 2*slots
	})
	if got := s.metric(t, "plantstore_http_shed_total"); got != 0 {
		t.Fatalf("plantstore_http_shed_total = %v while %d bodies trickle, want 0", got, len(slow))
	}
	if got := s.metric(t, "plantstore_http_concurrent_requests"); got != 0 {
		t.Fatalf("plantstore_http_concurrent_requests = %v while only bodies arrive, want 0", got)
	}
	if r := s.post(t, `{"id":100,"name":"fast"}`); r.Status != http.StatusOK || string(r.Body) != `{"name":"fast"}` {
		t.Fatalf("a fast create while %d bodies trickle = %d %s, want 200", len(slow), r.Status, r.Body)
	}
	for i, h := range slow {
		r := h.finish(t)
		if want := fmt.Sprintf(`{"name":"slow %d"}`, i); r.Status != http.StatusOK || string(r.Body) != want {
			t.Fatalf("slow create %d = %d %s, want 200 %s", i, r.Status, r.Body, want)
		}
	}
	if got := s.metric(t, "plantstore_http_shed_total"); got != 0 {
		t.Fatalf("plantstore_http_shed_total = %v, want 0", got)
	}
}
