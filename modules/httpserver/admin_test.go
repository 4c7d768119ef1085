package httpserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// testAdmin is the admin handler with routes like those other modules
// contribute: one that reads its body (as PUT /loglevel does) and echoes
// how much it read, and one that names its own type.
func testAdmin() http.Handler {
	level := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"level":"info"}`))
	})
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httperr.WriteBodyTooLarge(w, tooLarge.Limit)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"read":%d}`, len(body))
	})
	text := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("up 1\n"))
	})
	return NewAdminHandler(NewReadiness(nil, zap.NewNop()), []httpapi.Route{
		{Method: http.MethodGet, Path: "/loglevel", Handler: level},
		{Method: http.MethodPut, Path: "/loglevel", Handler: read},
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

// Every admin route reads at most AdminMaxBodyBytes: a larger declared
// body is refused before the handler runs, and a chunked one fails the
// handler's read at the cap.
func TestAdminBodyCap(t *testing.T) {
	h := testAdmin()
	tooLarge := fmt.Sprintf("request body is larger than the limit of %d bytes", AdminMaxBodyBytes)
	atCap := strings.Repeat(" ", AdminMaxBodyBytes)
	for _, tc := range []struct {
		name, method, path, body string
		chunked                  bool
	}{
		{"declared, one byte over", http.MethodPut, "/loglevel", atCap + " ", false},
		{"chunked, one byte over", http.MethodPut, "/loglevel", atCap + " ", true},
		{"declared, several MB", http.MethodPut, "/loglevel", strings.Repeat("x", 8<<20), false},
		{"declared, to a GET route", http.MethodGet, LivezPath, atCap + " ", false},
		{"declared, to an unknown path", http.MethodPost, "/nope", atCap + " ", false},
		{"declared, to a wrong method", http.MethodPost, "/loglevel", atCap + " ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = struct{ io.Reader }{body} // httptest leaves its length unknown
			}
			req := httptest.NewRequest(tc.method, tc.path, body)
			if tc.chunked && req.ContentLength != -1 {
				t.Fatalf("ContentLength = %d, want -1", req.ContentLength)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assertError(t, rec, http.StatusRequestEntityTooLarge, tooLarge)
		})
	}
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(atCap)
		if chunked {
			body = struct{ io.Reader }{body}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/loglevel", body))
		if want := fmt.Sprintf(`{"read":%d}`, AdminMaxBodyBytes); rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Errorf("body at the cap (chunked %v): %d %s, want 200 %s", chunked, rec.Code, rec.Body, want)
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

// HEAD is served wherever GET is, on the routes other modules contribute too.
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
