package auth

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkAuthCheck measures the bearer check of one request against a set
// of ten tokens. Run: go test -run '^$' -bench . -benchmem ./modules/auth
func BenchmarkAuthCheck(b *testing.B) {
	tokens := newTokenSet([]string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "bench-token"})
	m, err := newAuthMiddleware(tokens, prometheus.NewRegistry())
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

// BenchmarkAuthStaticVsJWT compares one request's check with a static
// token and with a JWT, both through the middleware that asks the static
// tokens first, then the verifier (as the program does with JWTs on). The
// JWT is verified once, then served from the cache by its digest; the
// "uncached" case is a new JWT each time (the signature check), for scale.
// Run: go test -run '^$' -bench StaticVsJWT -benchmem ./modules/auth
func BenchmarkAuthStaticVsJWT(b *testing.B) {
	iss, key, verifier := startJWT(b)
	tokens := newTokenSet([]string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "bench-token"})
	m, err := newAuthMiddleware(authenticators{tokens, verifier}, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	h := m.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	claims := iss.Claims("plantstore", "svc-bench", time.Hour)
	claims["scope"] = "plants:write"
	run := func(b *testing.B, token func() string) {
		req := httptest.NewRequest(http.MethodPost, "/plants", nil)
		w := httptest.NewRecorder()
		b.ReportAllocs()
		for b.Loop() {
			req.Header.Set("Authorization", "Bearer "+token())
			h.ServeHTTP(w, req)
		}
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	jwt := key.Sign(claims)
	b.Run("static", func(b *testing.B) { run(b, func() string { return "bench-token" }) })
	b.Run("jwt", func(b *testing.B) { run(b, func() string { return jwt }) })
	b.Run("jwt-uncached", func(b *testing.B) {
		n := 0
		run(b, func() string {
			n++
			claims["jti"] = strconv.Itoa(n)
			return key.Sign(claims)
		})
	})
}
