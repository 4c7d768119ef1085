package httpserver

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// chainTrace records the links a request went through, in order, with the
// route template each saw.
type chainTrace struct {
	mu    sync.Mutex
	links []string
}

func (c *chainTrace) link(name string) httpapi.Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.mu.Lock()
			c.links = append(c.links, name+" "+httpapi.RouteTemplate(r.Context()))
			c.mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
}

func TestAPIChainOrder(t *testing.T) {
	var trace chainTrace
	refuse := false
	auth := func(next http.Handler) http.Handler {
		return trace.link("auth")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refuse {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
	router := NewRouter([]httpapi.Route{{Method: http.MethodGet, Path: "/plants/{id}", Handler: trace.link("handler")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))}})
	reg := prometheus.NewRegistry()
	rc, err := NewRecoverer(zap.NewNop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	shed, err := NewShedder(1, reg)
	if err != nil {
		t.Fatal(err)
	}
	h := NewAPIHandler(router, MiddlewaresParams{
		Tracing:   trace.link("tracing"),
		Metrics:   trace.link("metrics"),
		AccessLog: trace.link("access_log"),
		Auth:      auth,
		RateLimit: trace.link("rate_limit"),
		Scope:     trace.link("scope"),
	}, rc, shed)

	for _, tc := range []struct {
		method, path string
		refuse       bool
		status       int
		links        []string
	}{
		{http.MethodGet, "/plants/1", false, http.StatusOK,
			[]string{"tracing /plants/{id}", "metrics /plants/{id}", "access_log /plants/{id}", "auth /plants/{id}", "rate_limit /plants/{id}", "scope /plants/{id}", "handler /plants/{id}"}},
		// Refused by auth: the handler never runs, but telemetry saw it.
		{http.MethodGet, "/plants/1", true, http.StatusUnauthorized,
			[]string{"tracing /plants/{id}", "metrics /plants/{id}", "access_log /plants/{id}", "auth /plants/{id}"}},
		// Unknown paths and methods pass through auth too: an anonymous
		// client learns nothing about the routes.
		{http.MethodGet, "/nope", true, http.StatusUnauthorized,
			[]string{"tracing unmatched", "metrics unmatched", "access_log unmatched", "auth unmatched"}},
		{http.MethodGet, "/nope", false, http.StatusNotFound,
			[]string{"tracing unmatched", "metrics unmatched", "access_log unmatched", "auth unmatched", "rate_limit unmatched", "scope unmatched"}},
		{http.MethodPut, "/plants/1", false, http.StatusMethodNotAllowed,
			[]string{"tracing /plants/{id}", "metrics /plants/{id}", "access_log /plants/{id}", "auth /plants/{id}", "rate_limit /plants/{id}", "scope /plants/{id}"}},
	} {
		trace.links, refuse = nil, tc.refuse
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status {
			t.Fatalf("%s %s (refuse %v): status %d, want %d", tc.method, tc.path, tc.refuse, rec.Code, tc.status)
		}
		if !slices.Equal(trace.links, tc.links) {
			t.Fatalf("%s %s (refuse %v): chain\n got %q\nwant %q", tc.method, tc.path, tc.refuse, trace.links, tc.links)
		}
	}
}

func TestRecover(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	router := NewRouter([]httpapi.Route{{Method: http.MethodPost, Path: "/plants", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		var plants []string
		_ = plants[len(plants)] //nolint:gocritic // on purpose: a real runtime panic, index out of range
	})}})
	rc, err := NewRecoverer(zap.New(core), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := router.Resolve(rc.Wrap(router.Dispatch()))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/plants", nil))
	assertError(t, rec, http.StatusInternalServerError, "internal error")

	entries := logs.FilterMessage("panic in handler").All()
	if len(entries) != 1 {
		t.Fatalf("log = %v, want one panic line", logs.All())
	}
	fields := entries[0].ContextMap()
	if fields["route"] != "/plants" || fields["stack"] == "" || fields["panic"] == nil {
		t.Fatalf("panic line fields = %v, want route, stack and panic", fields)
	}
}

// TestRecoverLetsAbortThrough: http.ErrAbortHandler is how a handler asks
// the server to drop the connection; Recover must not turn it into a 500.
func TestRecoverLetsAbortThrough(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	rc, err := NewRecoverer(zap.New(core), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := rc.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	rec := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler { //nolint:errorlint // the very value, as net/http compares it
				t.Fatalf("recovered %v, want http.ErrAbortHandler re-panicked", v)
			}
		}()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	if rec.Body.Len() != 0 || logs.Len() != 0 {
		t.Fatalf("abort wrote %q and logged %v", rec.Body, logs.All())
	}
	if got := testutil.ToFloat64(rc.panics); got != 0 {
		t.Fatalf("plantstore_http_panics_total = %v after an abort, want 0", got)
	}
}

// A public route skips the links about a caller and keeps the telemetry
// links; a route's Headers are on every answer, the chain's refusals too.
func TestAPIChainPublicRoutesAndRouteHeaders(t *testing.T) {
	var trace chainTrace
	auth := func(next http.Handler) http.Handler {
		return trace.link("auth")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
	csp := http.Header{"Content-Security-Policy": {"default-src 'self'"}}
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	router := NewRouter([]httpapi.Route{
		{Method: http.MethodGet, Path: "/console/{file}", Handler: trace.link("handler")(ok), Public: true, Headers: csp},
		{Method: http.MethodGet, Path: "/console/api/figures", Handler: trace.link("handler")(ok), Requires: "plants:read", Headers: csp},
		{Method: http.MethodGet, Path: "/plants", Handler: trace.link("handler")(ok)},
	})
	reg := prometheus.NewRegistry()
	rc, err := NewRecoverer(zap.NewNop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	shed, err := NewShedder(1, reg)
	if err != nil {
		t.Fatal(err)
	}
	h := NewAPIHandler(router, MiddlewaresParams{
		Tracing:   trace.link("tracing"),
		Metrics:   trace.link("metrics"),
		AccessLog: trace.link("access_log"),
		Auth:      auth,
		RateLimit: trace.link("rate_limit"),
		Scope:     trace.link("scope"),
	}, rc, shed)

	for _, tc := range []struct {
		path   string
		token  bool
		status int
		csp    bool
		links  []string
	}{
		{"/console/app.js", false, http.StatusOK, true,
			[]string{"tracing /console/{file}", "metrics /console/{file}", "access_log /console/{file}", "handler /console/{file}"}},
		{"/console/api/figures", false, http.StatusUnauthorized, true,
			[]string{"tracing /console/api/figures", "metrics /console/api/figures", "access_log /console/api/figures", "auth /console/api/figures"}},
		{"/console/api/figures", true, http.StatusOK, true,
			[]string{"tracing /console/api/figures", "metrics /console/api/figures", "access_log /console/api/figures", "auth /console/api/figures", "rate_limit /console/api/figures", "scope /console/api/figures", "handler /console/api/figures"}},
		{"/plants", false, http.StatusUnauthorized, false,
			[]string{"tracing /plants", "metrics /plants", "access_log /plants", "auth /plants"}},
	} {
		trace.links = nil
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.token {
			req.Header.Set("Authorization", "Bearer t")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Fatalf("GET %s (token %v): status %d, want %d", tc.path, tc.token, rec.Code, tc.status)
		}
		if got := rec.Header().Get("Content-Security-Policy") != ""; got != tc.csp {
			t.Fatalf("GET %s (token %v): Content-Security-Policy %q, want one: %v", tc.path, tc.token, rec.Header().Get("Content-Security-Policy"), tc.csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %s: X-Content-Type-Options %q, want nosniff", tc.path, rec.Header().Get("X-Content-Type-Options"))
		}
		if !slices.Equal(trace.links, tc.links) {
			t.Fatalf("GET %s (token %v): chain\n got %q\nwant %q", tc.path, tc.token, trace.links, tc.links)
		}
	}
}
