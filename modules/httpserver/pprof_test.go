package httpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// deadlineRecorder is a recorder whose connection deadline can be moved, as
// net/http's own writer's can.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadline time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadline = t
	return nil
}

func TestCPUProfileOutlastsTheWriteTimeout(t *testing.T) {
	h := cpuProfile{writeTimeout: 40 * time.Second}
	for _, tc := range []struct {
		query string
		want  time.Duration
	}{
		{"seconds=45", 45*time.Second + profileWriteMargin},
		{"seconds=9999", 300*time.Second + profileWriteMargin},
		{"", 30*time.Second + profileWriteMargin},
	} {
		// A canceled request ends the profile at once: no 45 s wait.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
		start := time.Now()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/debug/pprof/profile?"+tc.query, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%q: status %d %s", tc.query, rec.Code, rec.Body)
		}
		if got := rec.deadline.Sub(start); got < tc.want || got > tc.want+time.Second {
			t.Errorf("%q: write deadline moved to now+%v, want now+%v", tc.query, got, tc.want)
		}
	}
}

func TestCPUProfileRefusedWhenTheDeadlineCannotMove(t *testing.T) {
	h := cpuProfile{writeTimeout: 40 * time.Second}
	// httptest's recorder cannot move a deadline, like a wrapping writer
	// without Unwrap.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/profile?seconds=45", nil))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status = %d, want 400", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if want := "seconds=45: the admin write timeout (40s) allows at most 30 here\n"; rec.Body.String() != want {
		t.Errorf("body = %q, want %q", rec.Body, want)
	}
}

// Through a real server whose write timeout is shorter than the profile:
// without the moved deadline the client would read an empty reply.
func TestCPUProfileThroughAServer(t *testing.T) {
	cfg := Config{Pprof: true, Limits: Limits{WriteTimeout: 300 * time.Millisecond}}
	srv := httptest.NewUnstartedServer(NewAdminHandler(NewReadiness(nil, zap.NewNop()), PprofRoutes(cfg)))
	srv.Config = newServer(srv.Config.Handler, cfg.Limits, nil)
	srv.Start()
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/debug/pprof/profile?seconds=1")
	if err != nil {
		t.Fatalf("profile outlasting the write timeout: %v", err)
	}
	defer resp.Body.Close()
	if _, err := profile.Parse(resp.Body); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("profile: %d, %v", resp.StatusCode, err)
	}
}
