package httpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// holder is a handler whose requests stay in it until released; entered
// receives one value per request that got in.
type holder struct {
	entered chan struct{}
	release chan struct{}
}

func newHolder() *holder {
	return &holder{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (h *holder) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.entered <- struct{}{}
	<-h.release
	_, _ = io.WriteString(w, "done")
}

func TestShedderAnswers503OverTheCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := NewShedder(2, reg)
	if err != nil {
		t.Fatal(err)
	}
	h := newHolder()
	handler := s.Wrap(h)

	var wg sync.WaitGroup
	held := make([]*httptest.ResponseRecorder, 2)
	for i := range held {
		held[i] = httptest.NewRecorder()
		wg.Go(func() { handler.ServeHTTP(held[i], httptest.NewRequest(http.MethodPost, "/plants", nil)) })
	}
	<-h.entered
	<-h.entered
	if got := gauge(t, reg, "plantstore_http_concurrent_requests"); got != 2 {
		t.Fatalf("plantstore_http_concurrent_requests = %v, want 2", got)
	}

	for range 3 {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/plants", nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
			rec.Body.String() != `{"error":503,"message":"the server is at its limit of 2 concurrent requests; retry later"}` {
			t.Fatalf("over the cap: %d Retry-After=%q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	if got := testutil.ToFloat64(s.shed); got != 3 {
		t.Fatalf("plantstore_http_shed_total = %v, want 3", got)
	}

	close(h.release)
	wg.Wait()
	for i, rec := range held {
		if rec.Code != http.StatusOK || rec.Body.String() != "done" {
			t.Fatalf("held request %d = %d %s", i, rec.Code, rec.Body)
		}
	}
	// The slots are free again.
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/plants", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("after the held requests ended: %d %s", rec.Code, rec.Body)
	}
	if got := gauge(t, reg, "plantstore_http_concurrent_requests"); got != 0 {
		t.Fatalf("plantstore_http_concurrent_requests = %v, want 0", got)
	}
}

// TestChainShedsOnlyAuthenticatedRequests fills the cap with valid requests
// and shows that requests with bad tokens still get their 401 (auth comes
// first and they never take a slot), while a valid one is shed; and that
// every answer, whoever writes it, carries the security headers.
func TestChainShedsOnlyAuthenticatedRequests(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHolder()
	router := NewRouter([]httpapi.Route{{Method: http.MethodPost, Path: "/plants", Handler: h}})
	rec, err := NewRecoverer(zap.NewNop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	shed, err := NewShedder(1, reg)
	if err != nil {
		t.Fatal(err)
	}
	pass := func(next http.Handler) http.Handler { return next }
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer good" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	chain := NewAPIHandler(router, MiddlewaresParams{Tracing: pass, Metrics: pass, AccessLog: pass, Auth: auth, RateLimit: pass, Scope: pass}, rec, shed)

	serve := func(method, path, token string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		chain.ServeHTTP(w, r)
		return w
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(http.MethodPost, "/plants", "good") }()
	<-h.entered // the one slot is taken

	for _, tc := range []struct {
		method, path, token string
		want                int
	}{
		{http.MethodPost, "/plants", "bad", http.StatusUnauthorized},
		{http.MethodPost, "/plants", "", http.StatusUnauthorized},
		{http.MethodPost, "/plants", "good", http.StatusServiceUnavailable},
		{http.MethodGet, "/nowhere", "good", http.StatusServiceUnavailable},
	} {
		w := serve(tc.method, tc.path, tc.token)
		if w.Code != tc.want {
			t.Fatalf("%s %s with token %q = %d, want %d", tc.method, tc.path, tc.token, w.Code, tc.want)
		}
		assertSecurityHeaders(t, w.Header())
	}
	close(h.release)
	if w := <-done; w.Code != http.StatusOK {
		t.Fatalf("held request = %d", w.Code)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "/plants", http.StatusOK},
		{http.MethodGet, "/plants", http.StatusMethodNotAllowed},
		{http.MethodGet, "/nowhere", http.StatusNotFound},
	} {
		w := serve(tc.method, tc.path, "good")
		if w.Code != tc.want {
			t.Fatalf("%s %s = %d, want %d", tc.method, tc.path, w.Code, tc.want)
		}
		assertSecurityHeaders(t, w.Header())
	}
}

func assertSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	if got := h.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	if got := h.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
	}
}

// gauge reads a gauge from reg as a scrape would.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not registered", name)
	return 0
}

// TestLastingAnswersLeaveTheSlots: a request that declares its answer
// lasting (httpapi.Last) gives its slot back and takes a place of its
// kind: a caller over its share is answered 429, any caller over the total
// 503, both with Retry-After; the ordinary requests find the slot free
// meanwhile, and the places come back when the answers end.
func TestLastingAnswersLeaveTheSlots(t *testing.T) {
	reg := prometheus.NewRegistry()
	shed, err := NewShedderFor(Limits{MaxConcurrentRequests: 1, MaxFollowers: 3, MaxFollowersPerCaller: 2, MaxImports: 1, MaxImportsPerCaller: 1}, reg)
	if err != nil {
		t.Fatal(err)
	}
	h := newHolder()
	follow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		end, ok := httpapi.Last(w, r, httpapi.Follow, r.Header.Get("X-Caller"))
		if !ok {
			return
		}
		defer end()
		h.ServeHTTP(w, r)
	})
	rt := NewRouter([]httpapi.Route{
		{Method: http.MethodGet, Path: "/follow", Handler: follow},
		{Method: http.MethodGet, Path: "/plain", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "plain") })},
	})
	chain := rt.Resolve(shed.Wrap(rt.Dispatch()))
	serve := func(path, caller string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("X-Caller", caller)
		chain.ServeHTTP(w, r)
		return w
	}
	var held sync.WaitGroup
	for _, caller := range []string{"a", "a", "b"} {
		held.Go(func() {
			if w := serve("/follow", caller); w.Code != http.StatusOK || w.Body.String() != "done" {
				t.Errorf("held follower of %s: %d %s", caller, w.Code, w.Body)
			}
		})
		<-h.entered
	}
	if got := gauge(t, reg, "plantstore_http_concurrent_requests"); got != 0 {
		t.Fatalf("slots in use with three followers: %v, want 0", got)
	}
	for _, tc := range []struct {
		caller string
		status int
		body   string
	}{
		{"a", http.StatusTooManyRequests, `{"error":429,"message":"this token has 2 change streams and long polls open, as many as one token may; end one first"}`},
		{"c", http.StatusServiceUnavailable, `{"error":503,"message":"the server has 3 change streams and long polls open, as many as it serves at once; retry later"}`},
	} {
		w := serve("/follow", tc.caller)
		if w.Code != tc.status || w.Body.String() != tc.body || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("follower of %s over the caps: %d Retry-After=%q %s; want %d %s", tc.caller, w.Code, w.Header().Get("Retry-After"), w.Body, tc.status, tc.body)
		}
	}
	for i := range 3 {
		if w := serve("/plain", "a"); w.Code != http.StatusOK || w.Body.String() != "plain" {
			t.Fatalf("ordinary request %d beside the followers, one slot: %d %s", i, w.Code, w.Body)
		}
	}
	close(h.release)
	held.Wait()
	if w := serve("/follow", "a"); w.Code != http.StatusOK {
		t.Fatalf("a follower once the others ended: %d %s", w.Code, w.Body)
	}
	if got := gauge(t, reg, "plantstore_http_concurrent_requests"); got != 0 {
		t.Fatalf("slots in use at the end: %v, want 0", got)
	}
}
