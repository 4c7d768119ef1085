package httpserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// testAdmin is the admin handler with the routes the telemetry module
// contributes for /loglevel, and one that names its own type.
func testAdmin() http.Handler {
	level := zap.NewAtomicLevelAt(zap.InfoLevel)
	text := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("up 1\n"))
	})
	return NewAdminHandler(NewReadiness(nil, zap.NewNop()), []Route{
		{Method: http.MethodGet, Path: "/loglevel", Handler: level},
		{Method: http.MethodPut, Path: "/loglevel", Handler: level},
		{Method: http.MethodGet, Path: "/metrics", Handler: text},
	})
}

func TestAdminMethodNotAllowed(t *testing.T) {
	h := testAdmin()
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodPost, LivezPath, "GET, HEAD"},
		{http.MethodDelete, ReadyzPath, "GET, HEAD"},
		{http.MethodPut, VersionPath, "GET, HEAD"},
		{http.MethodPost, OpenAPIPath, "GET, HEAD"},
		{http.MethodDelete, "/loglevel", "GET, HEAD, PUT"},
		{http.MethodPost, "/loglevel", "GET, HEAD, PUT"},
		{http.MethodPost, "/metrics", "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			assertError(t, rec, http.StatusMethodNotAllowed, "method "+tc.method+" is not allowed here; allowed: "+tc.allow)
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Fatalf("Allow = %q, want %q", got, tc.allow)
			}
		})
	}
}

func TestAdminNotFoundHasNoAllow(t *testing.T) {
	rec := httptest.NewRecorder()
	testAdmin().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/nope", nil))
	assertError(t, rec, http.StatusNotFound, "no such admin path: /nope")
	if got := rec.Header().Get("Allow"); got != "" {
		t.Fatalf("404 with Allow %q", got)
	}
}

func TestAdminLogLevelIsJSON(t *testing.T) {
	h := testAdmin()
	for _, tc := range []struct {
		method, body, contentType string
		status                    int
		want                      string
	}{
		{http.MethodGet, "", "", http.StatusOK, `{"level":"info"}` + "\n"},
		{http.MethodPut, `{"level":"debug"}`, "application/json", http.StatusOK, `{"level":"debug"}` + "\n"},
		{http.MethodPut, "level=warn", "application/x-www-form-urlencoded", http.StatusOK, `{"level":"warn"}` + "\n"},
		{http.MethodPut, `{"level":"loud"}`, "application/json", http.StatusBadRequest, `{"error":"malformed request body: unrecognized level: \"loud\""}` + "\n"},
	} {
		req := httptest.NewRequest(tc.method, "/loglevel", strings.NewReader(tc.body))
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status || rec.Body.String() != tc.want {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.body, rec.Code, rec.Body, tc.status, tc.want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type = %q, want application/json", tc.method, tc.body, ct)
		}
	}
}

func TestAdminRouteKeepsItsOwnContentType(t *testing.T) {
	rec := httptest.NewRecorder()
	testAdmin().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || ct != "text/plain; version=0.0.4" {
		t.Fatalf("/metrics: %d, Content-Type %q, want 200 text/plain; version=0.0.4", rec.Code, ct)
	}
}

// HEAD is served wherever GET is, also by handlers that check the method
// themselves (zap's /loglevel answers 405 to anything but GET and PUT).
func TestAdminHeadAnswersLikeGet(t *testing.T) {
	srv := httptest.NewServer(testAdmin())
	defer srv.Close()
	for _, path := range []string{"/loglevel", "/metrics", LivezPath} {
		resp, err := srv.Client().Head(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) != 0 {
			t.Errorf("HEAD %s = %d with %d body bytes, want 200 and none", path, resp.StatusCode, len(body))
		}
	}
}
