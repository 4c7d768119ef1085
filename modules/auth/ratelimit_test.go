package auth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// limitedChain is the auth check then the rate limit, as on the API
// listener, in front of a handler that answers 200 with the request's
// TokenID.
func limitedChain(t *testing.T, perSecond float64, burst int, tokens ...string) (http.Handler, *RateLimiter) {
	t.Helper()
	reg := prometheus.NewRegistry()
	mw, err := NewMiddleware(NewTokens(tokens), reg)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := NewRateLimiter(perSecond, burst, reg)
	if err != nil {
		t.Fatal(err)
	}
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, TokenID(r.Context())) })
	return mw.Wrap(rl.Wrap(echo)), rl
}

func call(h http.Handler, token string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/plants", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	h.ServeHTTP(w, r)
	return w
}

func TestRateLimitPerToken(t *testing.T) {
	// One request per 1000 s: no token comes back while the test runs, so
	// the burst is all a token gets.
	h, rl := limitedChain(t, 0.001, 3, "alice-token", "bob-token")
	for i := range 3 {
		if w := call(h, "alice-token"); w.Code != http.StatusOK {
			t.Fatalf("alice request %d within the burst = %d %s", i+1, w.Code, w.Body)
		}
	}
	for range 2 {
		w := call(h, "alice-token")
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("alice over the burst = %d %s, want 429", w.Code, w.Body)
		}
		if w.Body.String() != `{"error":429,"message":"too many requests for this token; retry after the given delay"}` {
			t.Fatalf("429 body = %s", w.Body)
		}
		// The next token is 1000 s away, less the test's own run time.
		if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || s < 1 || s > 1000 {
			t.Fatalf("Retry-After = %q, want whole seconds in [1, 1000]", w.Header().Get("Retry-After"))
		}
	}
	if w := call(h, "bob-token"); w.Code != http.StatusOK {
		t.Fatalf("bob, whose bucket is full, = %d %s", w.Code, w.Body)
	}
	if w := call(h, "mallory-token"); w.Code != http.StatusUnauthorized {
		t.Fatalf("an unknown token = %d, want 401 before any limit", w.Code)
	}
	if got := testutil.ToFloat64(rl.limited); got != 2 {
		t.Fatalf("plantstore_http_rate_limited_total = %v, want 2", got)
	}
	if n := len(rl.limiters); n != 2 {
		t.Fatalf("%d limiters, want one per valid token that was seen (2)", n)
	}
}

func TestRateLimitOff(t *testing.T) {
	h, rl := limitedChain(t, 0, 0, "alice-token")
	for i := range 100 {
		if w := call(h, "alice-token"); w.Code != http.StatusOK {
			t.Fatalf("request %d with no limit = %d", i, w.Code)
		}
	}
	if len(rl.limiters) != 0 {
		t.Fatal("limiters were made with the limit off")
	}
}

func TestNewRateLimiterRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		perSecond float64
		burst     int
	}{{-1, 10}, {5, 0}, {5, -1}} {
		if _, err := NewRateLimiter(tc.perSecond, tc.burst, prometheus.NewRegistry()); err == nil {
			t.Errorf("NewRateLimiter(%v, %d) = nil error", tc.perSecond, tc.burst)
		}
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		wait string
		want int64
	}{{"1ns", 1}, {"999ms", 1}, {"1s", 1}, {"1001ms", 2}, {"16m40s", 1000}} {
		d, err := time.ParseDuration(tc.wait)
		if err != nil {
			t.Fatal(err)
		}
		if got := retryAfterSeconds(d); got != tc.want {
			t.Errorf("retryAfterSeconds(%s) = %d, want %d", tc.wait, got, tc.want)
		}
	}
}
