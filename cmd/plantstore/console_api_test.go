package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/plantstore/plantstore/modules/console"
)

// The console's files are text the document declares as strings.
func init() {
	for _, contentType := range []string{"text/html", "text/javascript", "text/css", "image/svg+xml"} {
		openapi3filter.RegisterBodyDecoder(contentType, openapi3filter.FileBodyDecoder)
	}
}

// The console's files are served without a token, with the console's
// headers; its figures need a token with plants:read, and carry the
// headers even when refused. Every answer is validated against the
// OpenAPI document.
func TestConsoleRoutes(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	csp := console.Headers.Get("Content-Security-Policy")

	for _, tc := range []struct {
		path, token, contentType string
		status                   int
	}{
		{"/console", "", "text/html; charset=utf-8", http.StatusOK},
		{"/console/assets/app.js", "", "text/javascript; charset=utf-8", http.StatusOK},
		{"/console/assets/console.css", "", "text/css; charset=utf-8", http.StatusOK},
		{"/console/assets/missing.js", "", "application/json", http.StatusNotFound},
		{"/console/api/figures", "", "application/json", http.StatusUnauthorized},
		{"/console/api/figures", "wrong-token", "application/json", http.StatusUnauthorized},
		{"/console/api/figures", testToken, "application/json", http.StatusOK},
	} {
		r := s.do(t, s.request(t, http.MethodGet, tc.path, tc.token, "", nil))
		if r.Status != tc.status || r.Header.Get("Content-Type") != tc.contentType {
			t.Fatalf("GET %s (token %q) = %d %q, want %d %q: %s", tc.path, tc.token, r.Status, r.Header.Get("Content-Type"), tc.status, tc.contentType, r.Body)
		}
		for name, want := range map[string]string{
			"Content-Security-Policy": csp, "Referrer-Policy": "no-referrer",
			"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Cache-Control": "no-store",
		} {
			if got := r.Header.Get(name); got != want {
				t.Fatalf("GET %s (token %q): %s %q, want %q", tc.path, tc.token, name, got, want)
			}
		}
		if len(r.Header.Values("Set-Cookie")) > 0 {
			t.Fatalf("GET %s set a cookie", tc.path)
		}
		if tc.path == "/console" && (!strings.Contains(string(r.Body), `<script type="module" src="/console/assets/app.js"></script>`) || strings.Contains(string(r.Body), testToken)) {
			t.Fatalf("the page does not load its script, or holds the token:\n%s", r.Body)
		}
	}

	// The figures: one sample at least (the start's), whose first rate
	// is unknown.
	var figures console.Figures
	s.do(t, s.request(t, http.MethodGet, "/console/api/figures", testToken, "", nil)).JSON(t, &figures)
	if figures.IntervalSeconds != console.SampleInterval.Seconds() || len(figures.Samples) == 0 || figures.Samples[0].CreatedPerSecond != nil {
		b, _ := json.Marshal(figures)
		t.Fatalf("figures = %s, want samples every %v, the first without a rate", b, console.SampleInterval)
	}
	if len(figures.Endpoints) != 0 {
		t.Fatalf("endpoints = %+v without webhooks, want none", figures.Endpoints)
	}

	// A public route answers its path only: another method is still
	// behind auth.
	if r := s.do(t, s.request(t, http.MethodPost, "/console", "", "", nil)); r.Status != http.StatusUnauthorized {
		t.Fatalf("POST /console without a token = %d, want 401", r.Status)
	}
}
