package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkAuthCheck measures the bearer check of one request against a set
// of ten tokens. Run: go test -run '^$' -bench . -benchmem ./modules/auth
func BenchmarkAuthCheck(b *testing.B) {
	tokens := NewTokens([]string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "bench-token"})
	m, err := NewMiddleware(tokens, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	h := m.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodPost, "/plants", nil)
	req.Header.Set("Authorization", "Bearer bench-token")
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
	if w.Code != http.StatusOK {
		b.Fatalf("status %d", w.Code)
	}
}
