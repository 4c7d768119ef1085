package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	httpserver "github.com/plantstore/plantstore/modules/httpserver"
)

func serve(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	router := httpserver.NewRouter(New(prometheus.NewRegistry()).Routes())
	rec := httptest.NewRecorder()
	router.Resolve(router.Dispatch()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestPageAndAssets(t *testing.T) {
	for _, tc := range []struct {
		path, contentType string
		status            int
	}{
		{"/console", "text/html; charset=utf-8", http.StatusOK},
		{"/console/", "text/html; charset=utf-8", http.StatusOK},
		{"/console/assets/app.js", "text/javascript; charset=utf-8", http.StatusOK},
		{"/console/assets/console.css", "text/css; charset=utf-8", http.StatusOK},
		{"/console/assets/icon.svg", "image/svg+xml", http.StatusOK},
		{"/console/assets/index.html", "application/json", http.StatusNotFound},
		{"/console/assets/nope.js", "application/json", http.StatusNotFound},
	} {
		rec := serve(t, tc.path)
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != tc.contentType {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, rec.Code, rec.Header().Get("Content-Type"), tc.status, tc.contentType)
		}
		if got := rec.Header().Get("Content-Security-Policy"); got != Headers.Get("Content-Security-Policy") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, got)
		}
		if got := rec.Header().Get("Referrer-Policy"); got != "no-referrer" {
			t.Errorf("GET %s: Referrer-Policy %q, want no-referrer", tc.path, got)
		}
	}
}

// The policy is strict: scripts and connections from this origin only,
// nothing inline, no framing.
// A path that leaves the assets matches no console route.
func TestAssetPathsStayInside(t *testing.T) {
	for _, path := range []string{"/console/assets/..%2fconsole.go", "/console/assets/../console.go", "/console/assets/a/b.js"} {
		if rec := serve(t, path); rec.Code != http.StatusNotFound && rec.Code != http.StatusMovedPermanently {
			t.Errorf("GET %s = %d, want 404 (or a redirect to the clean path)", path, rec.Code)
		} else if strings.Contains(rec.Body.String(), "package console") {
			t.Errorf("GET %s served the source", path)
		}
	}
}

func TestContentSecurityPolicy(t *testing.T) {
	csp := Headers.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*") || strings.Contains(csp, "data:") || strings.Contains(csp, "http") {
		t.Errorf("Content-Security-Policy %q allows more than this origin", csp)
	}
}

// The page's own files never build markup from strings, never evaluate
// strings as code, and load nothing from elsewhere; the HTML has no inline
// script, style or handler (the policy would refuse them anyway).
func TestAssetsBuildNoMarkupFromStrings(t *testing.T) {
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(["'\x60]|https?://`)
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|\sstyle=|\son[a-z]+=`)
	total := 0
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		total += len(b)
		text := string(b)
		if strings.HasSuffix(path, ".js") {
			if m := forbidden.FindString(text); m != "" {
				t.Errorf("%s uses %q", path, m)
			}
		}
		if strings.HasSuffix(path, ".html") {
			if m := inline.FindString(text); m != "" {
				t.Errorf("%s has inline %q", path, m)
			}
			if strings.Contains(text, "http://") || strings.Contains(text, "https://") {
				t.Errorf("%s loads something from elsewhere", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The binary and the image have budgets: the console stays small.
	if total > 64<<10 {
		t.Errorf("the console's files are %d bytes, over 64 KiB", total)
	}
}

func TestFiguresAnswer(t *testing.T) {
	rec := serve(t, FiguresPath)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s = %d %q", FiguresPath, rec.Code, rec.Header().Get("Content-Type"))
	}
	if want := `{"interval_seconds":5,"samples":[],"endpoints":[]}`; rec.Body.String() != want {
		t.Fatalf("figures before a sample = %s, want %s", rec.Body, want)
	}
}
