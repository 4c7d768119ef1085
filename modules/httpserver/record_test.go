package httpserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// TestRouterRecordsRequiredScope: the links of the chain learn the matched
// route's requirement (the auth module's scope check reads it), and a
// route, a path or a method that matches nothing requires nothing.
func TestRouterRecordsRequiredScope(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	router := NewRouter([]httpapi.Route{
		{Method: http.MethodPost, Path: "/plants", Handler: handler, Requires: "plants:write"},
		{Method: http.MethodGet, Path: "/plants/{id}", Handler: handler, Requires: "plants:read"},
		{Method: http.MethodGet, Path: "/open", Handler: handler},
	})
	var seen string
	h := router.Resolve(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen = httpapi.RequiredScope(r.Context())
	}))
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodPost, "/plants", "plants:write"},
		{http.MethodGet, "/plants/7", "plants:read"},
		{http.MethodHead, "/plants/7", "plants:read"}, // HEAD is the GET it stands for
		{http.MethodGet, "/open", ""},
		{http.MethodGet, "/nope", ""},
		{http.MethodPut, "/plants", ""}, // answered 405 whoever asks
	} {
		seen = "unset"
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tc.method, tc.path, nil))
		if seen != tc.want {
			t.Errorf("%s %s: RequiredScope = %q, want %q", tc.method, tc.path, seen, tc.want)
		}
	}
	if got := httpapi.RequiredScope(httptest.NewRequest(http.MethodPost, "/plants", nil).Context()); got != "" {
		t.Errorf("RequiredScope without Resolve = %q, want none", got)
	}
}

// TestAttachedVisibleOutside: a value a link attaches to the router's
// record (auth's principal) is seen by the handler, and by the links
// outside it once the request is served (the access log names the caller).
func TestAttachedVisibleOutside(t *testing.T) {
	type callerKey struct{}
	type otherKey struct{}
	caller := &struct{ name string }{"every"}
	var inHandler, afterServe any
	router := NewRouter([]httpapi.Route{{Method: http.MethodGet, Path: "/plants", Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		inHandler = r.Context().Value(callerKey{})
	})}})
	h := router.Resolve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // an outer link: the access log
		if v := r.Context().Value(callerKey{}); v != nil {
			t.Errorf("before the attach, the value is %v", v)
		}
		inner := r.WithContext(r.Context()) // links between derive contexts of their own
		if !httpapi.Attach(inner.Context(), callerKey{}, caller) {
			t.Fatal("no record behind Resolve")
		}
		if httpapi.Attach(inner.Context(), otherKey{}, "another") {
			t.Error("a second key took the record's one attachment")
		}
		router.Dispatch().ServeHTTP(w, inner)
		afterServe = r.Context().Value(callerKey{})
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/plants", nil))
	if inHandler != caller || afterServe != caller {
		t.Fatalf("handler saw %v, the outer link after serving %v; want the caller in both", inHandler, afterServe)
	}
	if httpapi.Attach(httptest.NewRequest(http.MethodGet, "/plants", nil).Context(), callerKey{}, caller) {
		t.Fatal("Attach without a record reported true")
	}
}
