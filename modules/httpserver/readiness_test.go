package httpserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

func TestReadiness(t *testing.T) {
	storeErr := error(nil)
	core, logs := observer.New(zap.DebugLevel)
	rd := NewReadiness([]httpapi.ReadinessCheck{
		{Name: "always", Check: func(context.Context) error { return nil }},
		{Name: "store", Check: func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("readiness check called without a deadline")
			}
			return storeErr
		}},
	}, zap.New(core))

	rec := serve(rd)
	if rec.Code != http.StatusOK || rec.Body.String() != `{"status":"ready"}` || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("ready: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}

	storeErr = errors.New("connection refused")
	assertError(t, serve(rd), http.StatusServiceUnavailable, "store is not ready")
	if e := logs.FilterMessage("readiness check failed").All(); len(e) != 1 || e[0].ContextMap()["check"] != "store" {
		t.Fatalf("log = %v, want one failed check named store", logs.All())
	}

	storeErr = nil
	if rec := serve(rd); rec.Code != http.StatusOK {
		t.Fatalf("store back: %d %s", rec.Code, rec.Body)
	}

	if rd.Draining() {
		t.Fatal("Draining before Drain")
	}
	rd.Drain()
	if !rd.Draining() {
		t.Fatal("not Draining after Drain")
	}
	// Draining is for good and wins over passing checks.
	for range 3 {
		assertError(t, serve(rd), http.StatusServiceUnavailable, "shutting down")
	}
}

func TestReadinessWithoutChecks(t *testing.T) {
	if rec := serve(NewReadiness(nil, zap.NewNop())); rec.Code != http.StatusOK {
		t.Fatalf("no checks: %d %s", rec.Code, rec.Body)
	}
}

func serve(h http.Handler) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ReadyzPath, nil))
	return rec
}

// TestReadinessHangingCheck: a check that never answers (a store behind a
// network partition, whose ping only times out) turns /readyz 503 within
// 2 s, the bound the chaos test holds a partitioned replica to.
func TestReadinessHangingCheck(t *testing.T) {
	rd := NewReadiness([]httpapi.ReadinessCheck{{Name: "store", Check: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}}}, zap.NewNop())
	start := time.Now()
	assertError(t, serve(rd), http.StatusServiceUnavailable, "store is not ready")
	if took := time.Since(start); took >= 2*time.Second {
		t.Fatalf("/readyz with a hanging check took %s, want under 2s", took)
	}
}
