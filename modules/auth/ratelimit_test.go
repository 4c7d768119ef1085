package auth

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// limitedChain is the auth check then the rate limit, as on the API
// listener, in front of a handler that answers 200 with the ID of the
// request's principal.
func limitedChain(t *testing.T, perSecond float64, burst int, tokens ...string) (http.Handler, *rateLimiter) {
	t.Helper()
	reg := prometheus.NewRegistry()
	mw, err := newAuthMiddleware(newTokenSet(tokens), reg)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := newRateLimiter(perSecond, burst, reg)
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

// TestRateLimitPerToken, on synctest's clock: a token gets its burst (the
// --rate-burst default, 20) at once, then 429 with Retry-After the exact
// wait for its next token; that token comes exactly then, one only.
func TestRateLimitPerToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One request per 1000 s: the burst is all a token gets until the
		// clock moves.
		const burst = 20
		h, rl := limitedChain(t, 0.001, burst, "alice-token", "bob-token")
		for i := range burst {
			if w := call(h, "alice-token"); w.Code != http.StatusOK {
				t.Fatalf("alice request %d within the burst = %d %s", i+1, w.Code, w.Body)
			}
		}
		over := func(when string, retryAfter string) {
			t.Helper()
			w := call(h, "alice-token")
			if w.Code != http.StatusTooManyRequests {
				t.Fatalf("alice over the burst %s = %d %s, want 429", when, w.Code, w.Body)
			}
			if w.Body.String() != `{"error":429,"message":"too many requests for this token; retry after the given delay"}` {
				t.Fatalf("429 body = %s", w.Body)
			}
			if got := w.Header().Get("Retry-After"); got != retryAfter {
				t.Fatalf("Retry-After %s = %q, want %q", when, got, retryAfter)
			}
		}
		over("at once", "1000")
		over("again", "1000") // a refusal takes no future token
		time.Sleep(1000*time.Second - 1500*time.Millisecond)
		over("1.5 s before the next token", "2") // rounded up
		time.Sleep(1500 * time.Millisecond)
		if w := call(h, "alice-token"); w.Code != http.StatusOK {
			t.Fatalf("alice 1000 s on = %d %s, want the one token refilled", w.Code, w.Body)
		}
		over("after the refilled token", "1000")
		if w := call(h, "bob-token"); w.Code != http.StatusOK {
			t.Fatalf("bob, whose bucket is full, = %d %s", w.Code, w.Body)
		}
		if w := call(h, "mallory-token"); w.Code != http.StatusUnauthorized {
			t.Fatalf("an unknown token = %d, want 401 before any limit", w.Code)
		}
		if got := testutil.ToFloat64(rl.limited); got != 4 {
			t.Fatalf("plantstore_http_rate_limited_total = %v, want 4", got)
		}
		if n := len(rl.limiters); n != 2 {
			t.Fatalf("%d limiters, want one per valid token that was seen (2)", n)
		}
	})
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
		if _, err := newRateLimiter(tc.perSecond, tc.burst, prometheus.NewRegistry()); err == nil {
			t.Errorf("newRateLimiter(%v, %d) = nil error", tc.perSecond, tc.burst)
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
// limiter, so dropping changes no answer. On synctest's clock, with the
// production sweep interval (a minute).
func TestRateLimitDropsIdleCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1 request per second, burst 2: an empty bucket is full after 2 s,
		// and the sweep runs at most once a minute (minSweepInterval).
		h, rl := limitedChain(t, 1, 2, "alice-token", "bob-token", "carol-token")

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
		time.Sleep(time.Minute) // minSweepInterval
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
		time.Sleep(time.Minute) // minSweepInterval
		if w := call(h, "carol-token"); w.Code != http.StatusOK {
			t.Fatalf("carol = %d", w.Code)
		}
		if _, ok := rl.limiters[principalID("carol-token")]; !ok || len(rl.limiters) != 1 {
			t.Fatalf("limiters after the second sweep: %d; want only carol's", len(rl.limiters))
		}

	})
}

// TestRateLimitSweepKeepsPenalties: a sweep that runs while a caller's
// bucket is still refilling keeps its limiter, so the caller stays refused
// exactly as long as without sweeps.
func TestRateLimitSweepKeepsPenalties(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One request per 1000 s, burst 1: a bucket takes 1000 s to refill,
		// so the sweeps run 1000 s apart.
		h, rl := limitedChain(t, 0.001, 1, "alice-token", "bob-token", "carol-token")
		if w := call(h, "bob-token"); w.Code != http.StatusOK { // the first sweep, of nothing, runs here
			t.Fatalf("bob = %d", w.Code)
		}
		time.Sleep(500 * time.Second)
		if w := call(h, "alice-token"); w.Code != http.StatusOK {
			t.Fatalf("alice = %d", w.Code)
		}
		time.Sleep(500 * time.Second) // the next sweep is due: bob's bucket is full, alice's half
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
	})
}

func principalID(token string) string {
	return TokenName(sha256.Sum256([]byte(token)))
}
