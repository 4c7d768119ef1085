package httpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestPprofRoutesOnlyWhenEnabled(t *testing.T) {
	ready := NewReadiness(nil, zap.NewNop())
	for _, enabled := range []bool{false, true} {
		h := NewAdminHandler(ready, PprofRoutes(Config{Pprof: enabled}))
		for path, want := range map[string]string{
			"/debug/pprof/":                  "goroutine",
			"/debug/pprof/heap?debug=1":      "heap profile",
			"/debug/pprof/profile?seconds=1": "", // a binary profile
			"/debug/pprof/goroutine?debug=1": "goroutine profile",
		} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			switch {
			case !enabled && rec.Code != http.StatusNotFound:
				t.Errorf("pprof off: GET %s = %d, want 404", path, rec.Code)
			case enabled && (rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) || rec.Body.Len() == 0 || strings.Contains(rec.Body.String(), "Unknown profile")):
				t.Errorf("pprof on: GET %s = %d, body without %q", path, rec.Code, want)
			}
		}
	}
}
