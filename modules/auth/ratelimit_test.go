package auth

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// limitedChain is the auth check then the rate limit, as on the API
// listener, in front of a handler that answers 200 with the ID of the
// request's principal.
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
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, principal.FromContext(r.Context()).ID)
	})
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

// TestRateLimitDropsIdleCallers: the limiters of callers whose bucket is
// full again are dropped, and only those: a caller mid-penalty keeps its
// limiter, so dropping changes no answer. The limiter's clock is the
// test's, so nothing waits.
func TestRateLimitDropsIdleCallers(t *testing.T) {
	// 1 request per second, burst 2: an empty bucket is full after 2 s,
	// and the sweep runs at most once a minute (minSweepInterval).
	h, rl := limitedChain(t, 1, 2, "alice-token", "bob-token", "carol-token")
	clock := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	rl.now = func() time.Time { return clock }

	for _, tok := range []string{"alice-token", "bob-token"} {
		if w := call(h, tok); w.Code != http.StatusOK {
			t.Fatalf("%s = %d", tok, w.Code)
		}
	}
	if n := len(rl.limiters); n != 2 {
		t.Fatalf("%d limiters, want 2", n)
	}

	// A minute on, bob is back and over his burst (3 requests at once),
	// alice has been quiet: the sweep runs on bob's first request and drops
	// only alice, whose bucket refilled long ago.
	clock = clock.Add(time.Minute)
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		if w := call(h, "bob-token"); w.Code != want {
			t.Fatalf("bob's request %d a minute on = %d, want %d", i+1, w.Code, want)
		}
	}
	if _, ok := rl.limiters[principalID("alice-token")]; ok || len(rl.limiters) != 1 {
		t.Fatalf("limiters after the sweep: %d, alice kept %v; want only bob's", len(rl.limiters), ok)
	}

	// The next sweep, a minute on, finds bob's bucket full again and drops
	// it too; carol's first request makes hers.
	clock = clock.Add(time.Minute)
	if w := call(h, "carol-token"); w.Code != http.StatusOK {
		t.Fatalf("carol = %d", w.Code)
	}
	if _, ok := rl.limiters[principalID("carol-token")]; !ok || len(rl.limiters) != 1 {
		t.Fatalf("limiters after the second sweep: %d; want only carol's", len(rl.limiters))
	}

}

// TestRateLimitSweepKeepsPenalties: a sweep that runs while a caller's
// bucket is still refilling keeps its limiter, so the caller stays refused
// exactly as long as without sweeps.
func TestRateLimitSweepKeepsPenalties(t *testing.T) {
	// One request per 1000 s, burst 1: a bucket takes 1000 s to refill,
	// so the sweeps run 1000 s apart.
	h, rl := limitedChain(t, 0.001, 1, "alice-token", "bob-token", "carol-token")
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clock := start
	rl.now = func() time.Time { return clock }
	if w := call(h, "bob-token"); w.Code != http.StatusOK { // the first sweep, of nothing, runs here
		t.Fatalf("bob = %d", w.Code)
	}
	clock = start.Add(500 * time.Second)
	if w := call(h, "alice-token"); w.Code != http.StatusOK {
		t.Fatalf("alice = %d", w.Code)
	}
	clock = start.Add(1000 * time.Second) // the next sweep is due: bob's bucket is full, alice's half
	if w := call(h, "carol-token"); w.Code != http.StatusOK {
		t.Fatalf("carol = %d", w.Code)
	}
	if _, ok := rl.limiters[principalID("bob-token")]; ok {
		t.Fatal("bob's full bucket was kept by the sweep")
	}
	if _, ok := rl.limiters[principalID("alice-token")]; !ok {
		t.Fatal("alice's refilling bucket was dropped by the sweep")
	}
	w := call(h, "alice-token")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "500" {
		t.Fatalf("alice after the sweep = %d, Retry-After %q; want 429 and 500 (her penalty kept)", w.Code, w.Header().Get("Retry-After"))
	}
}

func principalID(token string) string {
	return TokenName(sha256.Sum256([]byte(token)))
}
