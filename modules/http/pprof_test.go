package httpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"go.uber.org/zap"
)

func TestPprofRoutesOnlyWhenEnabled(t *testing.T) {
	ready := NewReadiness(nil, zap.NewNop())
	paths := []string{"/debug/pprof/profile?seconds=1", "/debug/pprof/heap", "/debug/pprof/goroutine"}
	for _, enabled := range []bool{false, true} {
		h := NewAdminHandler(ready, PprofRoutes(Config{Pprof: enabled}))
		for _, path := range paths {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if !enabled {
				if rec.Code != http.StatusNotFound {
					t.Errorf("pprof off: GET %s = %d, want 404", path, rec.Code)
				}
				continue
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("pprof on: GET %s = %d", path, rec.Code)
			}
			if _, err := profile.Parse(rec.Body); err != nil {
				t.Errorf("pprof on: GET %s is not a profile go tool pprof reads: %v", path, err)
			}
		}
	}
	rec := httptest.NewRecorder()
	NewAdminHandler(ready, PprofRoutes(Config{Pprof: true})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/goroutine?debug=1", nil))
	if !strings.Contains(rec.Body.String(), "goroutine profile:") {
		t.Errorf("goroutine?debug=1 is not the text profile: %.80q", rec.Body.String())
	}
}
