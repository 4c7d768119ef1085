package httpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// routed is what the test routes answer: which route ran, with which
// template and path variables.
func routed(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vars := []byte("{}") // a route without variables has none, nil or empty
		if v := mux.Vars(r); len(v) > 0 {
			vars, _ = json.Marshal(v)
		}
		w.Header().Set("X-Route", name)
		w.Header().Set("X-Template", httpapi.RouteTemplate(r.Context()))
		_, _ = w.Write(vars)
	})
}

func testRouter() *Router {
	return NewRouter([]httpapi.Route{
		{Method: http.MethodPost, Path: "/plants", Handler: routed("create")},
		{Method: http.MethodGet, Path: "/plants", Handler: routed("list")},
		{Method: http.MethodGet, Path: "/plants/{id}", Handler: routed("get")},
		{Method: http.MethodDelete, Path: "/plants/{id}", Handler: routed("delete")},
	})
}

// serveResolved serves req through Resolve and Dispatch and reports the
// template a middleware between the two saw.
func serveResolved(rt *Router, req *http.Request) (rec *httptest.ResponseRecorder, template string) {
	rec = httptest.NewRecorder()
	h := rt.Resolve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		template = httpapi.RouteTemplate(r.Context())
		rt.Dispatch().ServeHTTP(w, r)
	}))
	h.ServeHTTP(rec, req)
	return rec, template
}

func TestRouterMatches(t *testing.T) {
	rt := testRouter()
	for _, tc := range []struct {
		method, path, route, template, vars string
	}{
		{http.MethodPost, "/plants", "create", "/plants", `{}`},
		{http.MethodGet, "/plants", "list", "/plants", `{}`},
		{http.MethodGet, "/plants/42", "get", "/plants/{id}", `{"id":"42"}`},
		{http.MethodDelete, "/plants/-7", "delete", "/plants/{id}", `{"id":"-7"}`},
		{http.MethodGet, "/plants?limit=2", "list", "/plants", `{}`},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec, template := serveResolved(rt, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != http.StatusOK || rec.Header().Get("X-Route") != tc.route {
				t.Fatalf("answer %d from route %q, want 200 from %q", rec.Code, rec.Header().Get("X-Route"), tc.route)
			}
			if template != tc.template || rec.Header().Get("X-Template") != tc.template {
				t.Fatalf("template seen by the chain %q, by the handler %q; want %q", template, rec.Header().Get("X-Template"), tc.template)
			}
			if got := rec.Body.String(); got != tc.vars {
				t.Fatalf("mux.Vars = %s, want %s", got, tc.vars)
			}
		})
	}
}

// TestRouterPrefersLiteralPaths: a literal path wins over a template that
// also matches it, in whichever order the routes were given.
func TestRouterPrefersLiteralPaths(t *testing.T) {
	literal := httpapi.Route{Method: http.MethodGet, Path: "/plants/changes", Handler: routed("changes")}
	template := httpapi.Route{Method: http.MethodGet, Path: "/plants/{id}", Handler: routed("get")}
	for _, routes := range [][]httpapi.Route{{literal, template}, {template, literal}} {
		rt := NewRouter(routes)
		rec, tmpl := serveResolved(rt, httptest.NewRequest(http.MethodGet, "/plants/changes", nil))
		if got := rec.Header().Get("X-Route"); got != "changes" || tmpl != "/plants/changes" {
			t.Fatalf("routes %s then %s: GET /plants/changes went to %q (template %q)", routes[0].Path, routes[1].Path, got, tmpl)
		}
		if rec, _ := serveResolved(rt, httptest.NewRequest(http.MethodGet, "/plants/7", nil)); rec.Header().Get("X-Route") != "get" {
			t.Fatalf("GET /plants/7 went to %q", rec.Header().Get("X-Route"))
		}
	}
	// Another method on the literal path is a 405 with its methods, though
	// the template serves that method.
	put := httpapi.Route{Method: http.MethodPut, Path: "/plants/{id}", Handler: routed("put")}
	rt := NewRouter([]httpapi.Route{put, literal, template})
	for _, method := range []string{http.MethodPut, http.MethodPatch} { // PATCH: no route serves it
		rec, tmpl := serveResolved(rt, httptest.NewRequest(method, "/plants/changes", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" || tmpl != "/plants/changes" ||
			rec.Body.String() != `{"error":405,"message":"method `+method+` is not allowed here; allowed: GET, HEAD"}` {
			t.Fatalf("%s /plants/changes = %d Allow %q template %q %s, want 405 Allow GET, HEAD", method, rec.Code, rec.Header().Get("Allow"), tmpl, rec.Body)
		}
	}
	if rec, _ := serveResolved(rt, httptest.NewRequest(http.MethodPut, "/plants/7", nil)); rec.Header().Get("X-Route") != "put" {
		t.Fatalf("PUT /plants/7 went to %q", rec.Header().Get("X-Route"))
	}
}

func TestRouterNotFound(t *testing.T) {
	rt := testRouter()
	for _, path := range []string{"/", "/plant", "/plants/1/leaves", "/PLANTS", "/secret/../etc/passwd"} {
		rec, template := serveResolved(rt, httptest.NewRequest(http.MethodGet, path, nil))
		if template != httpapi.UnmatchedRoute {
			t.Fatalf("%s: template = %q, want %q (never the raw path)", path, template, httpapi.UnmatchedRoute)
		}
		assertError(t, rec, http.StatusNotFound, "no such path: "+path)
		if rec.Header().Get("Allow") != "" {
			t.Fatalf("%s: 404 with Allow %q", path, rec.Header().Get("Allow"))
		}
	}
}

func TestRouterMethodNotAllowed(t *testing.T) {
	rt := testRouter()
	for _, tc := range []struct {
		method, path, template, allow string
	}{
		{http.MethodPut, "/plants", "/plants", "GET, HEAD, POST"},
		{http.MethodDelete, "/plants", "/plants", "GET, HEAD, POST"},
		{http.MethodPost, "/plants/1", "/plants/{id}", "DELETE, GET, HEAD"},
		{"BREW", "/plants/1", "/plants/{id}", "DELETE, GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec, template := serveResolved(rt, httptest.NewRequest(tc.method, tc.path, nil))
			assertError(t, rec, http.StatusMethodNotAllowed, "method "+tc.method+" is not allowed here; allowed: "+tc.allow)
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Fatalf("Allow = %q, want %q", got, tc.allow)
			}
			if template != tc.template {
				t.Fatalf("template = %q, want %q", template, tc.template)
			}
		})
	}
}

func TestRouterDispatchWithoutResolve(t *testing.T) {
	rt := testRouter()
	rec := httptest.NewRecorder()
	rt.Dispatch().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/plants/9", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("X-Route") != "get" || rec.Body.String() != `{"id":"9"}` {
		t.Fatalf("answer %d %q %s", rec.Code, rec.Header().Get("X-Route"), rec.Body)
	}
	rec = httptest.NewRecorder()
	rt.Dispatch().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/nope", nil))
	assertError(t, rec, http.StatusNotFound, "no such path: /nope")
}

func TestRouteTemplateOutsideTheChain(t *testing.T) {
	if got := httpapi.RouteTemplate(httptest.NewRequest(http.MethodGet, "/plants", nil).Context()); got != httpapi.UnmatchedRoute {
		t.Fatalf("httpapi.RouteTemplate without Resolve = %q, want %q", got, httpapi.UnmatchedRoute)
	}
}

// assertError checks an exact JSON Error answer.
func assertError(t *testing.T, rec *httptest.ResponseRecorder, status int, message string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", rec.Body, err)
	}
	if len(got) != 2 || got["error"] != float64(status) || got["message"] != message {
		t.Fatalf("body = %s, want {\"error\":%d,\"message\":%q}", rec.Body, status, message)
	}
}

// readAll reads a response body whole.
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
