package main

// Black-box tests of the service's defences against slow, greedy and
// hostile clients, on the real Fx app. docs/threat-model.md names them.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// hangGuard bounds every wait on the server in these tests. It is never the
// expected outcome: a test that reaches it fails.
const hangGuard = 30 * time.Second

// dial opens a raw connection to the API listener.
func (s *testServer) dial(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.API, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// assertClosedByServer reads from conn until the server closes it. It fails
// if the server answered anything or if the hang guard ran out first.
func assertClosedByServer(t *testing.T, conn net.Conn) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("the server kept the connection open for %v", hangGuard)
	case len(got) > 0:
		t.Fatalf("the server answered %q; want the connection closed without an answer", got)
	}
	// io.ReadAll's nil error is EOF: the server closed. A reset (the
	// server closed with our bytes unread) is a close too.
}

// TestSlowlorisIsCutOffAtHeaderTimeout: clients that dribble their headers,
// a byte every 100ms, are disconnected at the header timeout, while other
// clients keep being served.
func TestSlowlorisIsCutOffAtHeaderTimeout(t *testing.T) {
	t.Parallel() // a server of its own; the test mostly waits out the server's timeouts
	cfg := testConfig(t)
	cfg.HTTP.Limits.ReadHeaderTimeout = 500 * time.Millisecond
	s := startServer(t, cfg)

	const slowClients = 20
	conns := make([]net.Conn, slowClients)
	stop := make(chan struct{})
	var dribblers sync.WaitGroup
	for i := range conns {
		conns[i] = s.dial(t)
		if _, err := io.WriteString(conns[i], "POST /plants HTTP/1.1\r\nHost: plantstore\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		dribblers.Go(func() {
			// At most 300 bytes (30 s): the headers never end.
			for range 300 {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := conns[i].Write([]byte{'a'}); err != nil {
					return // the server closed the connection
				}
			}
		})
	}
	defer func() { close(stop); dribblers.Wait() }()

	// Well-behaved clients are served meanwhile.
	for id := range 50 {
		r := s.post(t, fmt.Sprintf(`{"id":%d,"name":"fern"}`, id))
		if r.Status != http.StatusOK {
			t.Fatalf("a normal client during the slowloris got %d %s", r.Status, r.Body)
		}
	}
	for _, conn := range conns {
		assertClosedByServer(t, conn)
	}
	if r := s.post(t, `{"id":1000,"name":"fern"}`); r.Status != http.StatusOK {
		t.Fatalf("a normal client after the slowloris got %d %s", r.Status, r.Body)
	}
}

// TestSlowBodyIsCutOffAtReadTimeout: a client that sends its headers and
// then dribbles its body gets a 400 at the read timeout, and nothing of the
// plant is stored.
func TestSlowBodyIsCutOffAtReadTimeout(t *testing.T) {
	t.Parallel() // a server of its own; the test mostly waits out the server's timeouts
	cfg := testConfig(t)
	cfg.HTTP.Limits.ReadTimeout = time.Second
	s := startServer(t, cfg)

	conn := s.dial(t)
	body := `{"id":7,"name":"slow"}`
	fmt.Fprintf(conn, "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", testToken, len(body), body[:5])
	if err := conn.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	// Dribble nothing more: the handler is blocked reading the body until
	// the read deadline.
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("slow body = %d %s, want 400", resp.StatusCode, got)
	}
	// Plant 7 was not stored: a create with other content succeeds.
	if r := s.post(t, `{"id":7,"name":"other"}`); r.Status != http.StatusOK {
		t.Fatalf("plant 7 after the cut-off body: %d %s", r.Status, r.Body)
	}
}

// TestOversizedHeadersAreRefused: headers over --max-header-bytes get 431
// from net/http before any handler runs.
func TestOversizedHeadersAreRefused(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTP.Limits.MaxHeaderBytes = 8 << 10
	s := startServer(t, cfg)
	req := s.request(t, http.MethodPost, "/plants", testToken, "application/json", []byte(`{"id":1,"name":"a"}`))
	req.Header.Set("X-Padding", strings.Repeat("p", 64<<10))
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB header = %d, want 431", resp.StatusCode)
	}
	if r := s.post(t, `{"id":1,"name":"a"}`); r.Status != http.StatusOK {
		t.Fatalf("a normal request afterwards = %d", r.Status)
	}
}

// heldCreate is a POST /plants whose body is sent in two halves: the
// server is reading it in between.
type heldCreate struct {
	conn net.Conn
	body string
	sent int
}

func startHeldCreate(t *testing.T, s *testServer, body string) *heldCreate {
	t.Helper()
	h := &heldCreate{conn: s.dial(t), body: body, sent: len(body) / 2}
	_, err := fmt.Fprintf(h.conn, "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", testToken, len(body), body[:h.sent])
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// finish sends the rest of the body and returns the answer.
func (h *heldCreate) finish(t *testing.T) response {
	t.Helper()
	if _, err := io.WriteString(h.conn, h.body[h.sent:]); err != nil {
		t.Fatal(err)
	}
	if err := h.conn.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(h.conn), nil)
	if err != nil {
		t.Fatalf("held create: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// metric scrapes the admin listener for an unlabelled sample's value.
func (s *testServer) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := s.Client.Get(s.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return v
		}
	}
	t.Fatalf("/metrics has no sample %s", name)
	return 0
}

// gatedStore holds every Create at the store's door until release is
// closed, then lets it through to the real store: requests that took a
// slot of the concurrency cap (their bodies read) stay in flight for as long
// as the test needs. Bodies no longer hold slots (see
// TestSlowBodiesDoNotHoldTheSlots), so something past the body must.
type gatedStore struct {
	plant.Store
	release chan struct{}
}

func (g *gatedStore) Create(ctx context.Context, p plant.Plant) (plant.CreateResult, error) {
	<-g.release
	return g.Store.Create(ctx, p)
}

// sendCreate sends a whole POST /plants on a connection of its own; finish
// reads the answer.
func sendCreate(t *testing.T, s *testServer, body string) *heldCreate {
	t.Helper()
	h := &heldCreate{conn: s.dial(t), body: body, sent: len(body)}
	_, err := fmt.Fprintf(h.conn, "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", testToken, len(body), body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestOverTheConcurrencyCap fills the cap with creates held at the store:
// further creates get 503 with Retry-After and leave nothing in the store,
// requests with bad tokens still get their 401, and once the store lets
// them through every held create answers 200 and is stored exactly.
func TestOverTheConcurrencyCap(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		const capacity = 4
		cfg.HTTP.Limits.MaxConcurrentRequests = capacity
		gate := make(chan struct{})
		s := startServer(t, cfg, fx.Decorate(func(store plant.Store) plant.Store {
			return &gatedStore{Store: store, release: gate}
		}))

		held := make([]*heldCreate, capacity)
		for i := range held {
			held[i] = sendCreate(t, s, fmt.Sprintf(`{"id":%d,"name":"held %d","tag":"t%d"}`, i, i, i))
		}
		eventually(t, hangGuard, "the held creates take every slot", func() bool {
			return s.metric(t, "plantstore_http_concurrent_requests") == capacity
		})

		const extra = 5
		for i := range extra {
			r := s.post(t, fmt.Sprintf(`{"id":%d,"name":"shed"}`, 100+i))
			assertErrorMessage(t, r, http.StatusServiceUnavailable,
				"the server is at its limit of 4 concurrent requests; retry later")
			if ra := r.Header.Get("Retry-After"); ra != "1" {
				t.Fatalf("Retry-After = %q, want 1", ra)
			}
		}
		// Auth comes before the cap: bad tokens are refused, not shed.
		r := s.do(t, s.request(t, http.MethodPost, "/plants", "bad-token", "application/json", []byte(`{"id":200,"name":"x"}`)))
		assertError(t, r, http.StatusUnauthorized)
		if got := s.metric(t, "plantstore_http_shed_total"); got != extra {
			t.Fatalf("plantstore_http_shed_total = %v, want %d", got, extra)
		}

		close(gate)
		var wg sync.WaitGroup
		answers := make([]response, capacity)
		for i, h := range held {
			wg.Go(func() { answers[i] = h.finish(t) })
		}
		wg.Wait()
		for i, a := range answers {
			want := fmt.Sprintf(`{"name":"held %d","tag":"t%d"}`, i, i)
			if a.Status != http.StatusOK || string(a.Body) != want {
				t.Fatalf("held create %d = %d %s, want 200 %s", i, a.Status, a.Body, want)
			}
			tag := fmt.Sprintf("t%d", i)
			assertStored(t, s, plant.Plant{ID: int64(i), Name: fmt.Sprintf("held %d", i), Tag: &tag})
		}
		for i := range extra {
			if p, err := s.Store.Get(context.Background(), int64(100+i)); !errors.Is(err, plant.ErrNotFound) {
				t.Fatalf("shed create %d left %+v, %v in the store; want nothing", 100+i, p, err)
			}
		}
		eventually(t, hangGuard, "the slots are free again", func() bool {
			return s.metric(t, "plantstore_http_concurrent_requests") == 0
		})
	})
}

// TestRateLimitPerToken: a token over its burst gets 429 with Retry-After;
// another token is unaffected.
func TestRateLimitPerToken(t *testing.T) {
	t.Parallel()
	const otherToken = "other-token-9876543210"
	cfg := testConfig(t)
	cfg.Auth = authConfig([]string{testToken, otherToken})
	// One request per 1000 s: no token refills while the test runs.
	cfg.Auth.RateLimit, cfg.Auth.RateBurst = 0.001, 3
	s := startServer(t, cfg)

	for id := range 3 {
		if r := s.post(t, fmt.Sprintf(`{"id":%d,"name":"a"}`, id)); r.Status != http.StatusOK {
			t.Fatalf("request %d within the burst = %d %s", id, r.Status, r.Body)
		}
	}
	r := s.post(t, `{"id":3,"name":"a"}`)
	assertError(t, r, http.StatusTooManyRequests)
	if sec, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || sec < 1 || sec > 1000 {
		t.Fatalf("Retry-After = %q, want whole seconds in [1, 1000]", r.Header.Get("Retry-After"))
	}
	other := s.do(t, s.request(t, http.MethodPost, "/plants", otherToken, "application/json", []byte(`{"id":3,"name":"a"}`)))
	if other.Status != http.StatusOK {
		t.Fatalf("another token = %d %s", other.Status, other.Body)
	}
	if got := s.metric(t, "plantstore_http_rate_limited_total"); got != 1 {
		t.Fatalf("plantstore_http_rate_limited_total = %v, want 1", got)
	}
}

// TestSecurityHeadersOnEveryAnswer: success and every kind of error carry
// Cache-Control: no-store and X-Content-Type-Options: nosniff.
func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Plants.MaxBodyBytes = 64
	s := startServer(t, cfg)
	for _, tc := range []struct {
		name                       string
		method, path, token, ctype string
		body                       string
		want                       int
	}{
		{"created", http.MethodPost, "/plants", testToken, "application/json", `{"id":1,"name":"a"}`, http.StatusOK},
		{"bad JSON", http.MethodPost, "/plants", testToken, "application/json", `{`, http.StatusBadRequest},
		{"no token", http.MethodPost, "/plants", "", "application/json", `{"id":1,"name":"a"}`, http.StatusUnauthorized},
		{"unknown path", http.MethodGet, "/nowhere", testToken, "", "", http.StatusNotFound},
		{"wrong method", http.MethodPut, "/plants", testToken, "", "", http.StatusMethodNotAllowed},
		{"conflict", http.MethodPost, "/plants", testToken, "application/json", `{"id":1,"name":"b"}`, http.StatusConflict},
		{"too large", http.MethodPost, "/plants", testToken, "application/json", `{"id":1,"name":"` + strings.Repeat("a", 100) + `"}`, http.StatusRequestEntityTooLarge},
		{"not JSON", http.MethodPost, "/plants", testToken, "text/plain", `x`, http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, s.request(t, tc.method, tc.path, tc.token, tc.ctype, []byte(tc.body)))
			if r.Status != tc.want {
				t.Fatalf("status = %d, want %d; %s", r.Status, tc.want, r.Body)
			}
			if got := r.Header.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			if got := r.Header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
		})
	}
}

// TestRefusedBodiesAreNotAwaited: a request that is refused without its
// body being read (bad token, unknown path, declared too large) and whose
// body never comes is answered and its connection closed after
// httpserver.UnreadBodyGrace, not after the 30s read timeout; a client that
// does send its body keeps its connection.
func TestRefusedBodiesAreNotAwaited(t *testing.T) {
	t.Parallel() // a server of its own; the test mostly waits out the server's timeouts
	cfg := testConfig(t)
	cfg.Plants.MaxBodyBytes = 100
	// Far past the hang guard: only the grace can end a withheld body.
	cfg.HTTP.Limits.ReadTimeout = 10 * time.Minute
	s := startServer(t, cfg)
	const declared = 1000 // over the limit, under net/http's 256 KiB discard
	head := func(path, token string) string {
		auth := ""
		if token != "" {
			auth = "Authorization: Bearer " + token + "\r\n"
		}
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: plantstore\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			path, auth, declared)
	}
	read := func(t *testing.T, br *bufio.Reader) *http.Response {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// The cases run at the same time, each on connections of its own: a
	// withheld body waits out UnreadBodyGrace, and the four waits need not
	// come one after the other.
	var cases sync.WaitGroup
	for _, tc := range []struct {
		name, path, token string
		want              int
		closes            bool // a 401 always closes: see TestIdleConnectionsAreCapped
	}{
		{"bad token", "/plants", "bad-token", http.StatusUnauthorized, true},
		{"no token", "/plants", "", http.StatusUnauthorized, true},
		{"unknown path", "/nowhere", testToken, http.StatusNotFound, false},
		{"declared too large", "/plants", testToken, http.StatusRequestEntityTooLarge, false},
	} {
		cases.Go(func() {
			t.Run(tc.name+", body withheld", func(t *testing.T) {
				conn := s.dial(t)
				if _, err := io.WriteString(conn, head(tc.path, tc.token)); err != nil {
					t.Fatal(err)
				}
				if err := conn.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(conn)
				if resp := read(t, br); resp.StatusCode != tc.want || !resp.Close {
					t.Fatalf("status = %d, Connection: close %v; want %d and close", resp.StatusCode, resp.Close, tc.want)
				}
				if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
					t.Fatalf("after the answer: %q, %v; want the connection closed", rest, err)
				}
			})
			t.Run(tc.name+", body sent", func(t *testing.T) {
				conn := s.dial(t)
				if err := conn.SetReadDeadline(time.Now().Add(hangGuard)); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(conn)
				if tc.closes {
					if _, err := io.WriteString(conn, head(tc.path, tc.token)+strings.Repeat(" ", declared)); err != nil {
						t.Fatal(err)
					}
					if resp := read(t, br); resp.StatusCode != tc.want || !resp.Close {
						t.Fatalf("status = %d, Connection: close %v; want %d and close", resp.StatusCode, resp.Close, tc.want)
					}
					if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
						t.Fatalf("after the answer: %q, %v; want the connection closed", rest, err)
					}
					return
				}
				for i := range 2 { // the second request reuses the connection
					if _, err := io.WriteString(conn, head(tc.path, tc.token)+strings.Repeat(" ", declared)); err != nil {
						t.Fatal(err)
					}
					if resp := read(t, br); resp.StatusCode != tc.want || resp.Close {
						t.Fatalf("request %d: status = %d, Connection: close %v; want %d on a kept connection",
							i+1, resp.StatusCode, resp.Close, tc.want)
					}
				}
			})
		})
	}
	cases.Wait()
}
