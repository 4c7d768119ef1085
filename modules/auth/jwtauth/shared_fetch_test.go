package jwtauth

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestKeySourceSharesOneFetch, on synctest's clock with the production
// fetch timeout (10 s), window (5 s) and waiter bound (64): with the
// issuer hanging, requests with unknown kids share the one fetch under way
// instead of queueing for a fetch each: exactly one request reaches the
// issuer, however long it hangs (the window passing included); each
// waiting request returns as soon as its own context ends, while the
// fetch still hangs; beyond the bound, requests are refused at once; a
// request waiting for a key the fetch brings gets it; and the window
// starts again when the fetch ends.
func TestKeySourceSharesOneFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The JWKS URL alone: one fetch is one request to the issuer.
		ti := startIssuer(t, Config{JWKSURL: jwksOnly})
		claims := ti.Claims(audience, "svc-a", time.Minute)
		errorFetches := func() float64 { return testutil.ToFloat64(ti.keys.fetchCount.WithLabelValues("error")) }
		before, errorsBefore := ti.Requests(), errorFetches()

		release := ti.Hold()
		defer release()

		type result struct {
			i      int
			reason string
		}
		const bound = 64       // maxKeyWaiters
		const last = bound - 1 // the request waiting for a key the fetch brings
		results := make(chan result, bound)
		cancels := make([]context.CancelFunc, bound)
		ask := func(i int, token string) {
			ctx, cancel := context.WithCancel(t.Context())
			cancels[i] = cancel
			go func() {
				_, err := ti.verifier.Authenticate(ctx, token)
				reason := ""
				var f *failure
				if errors.As(err, &f) {
					reason = f.Reason
				} else if err != nil {
					reason = err.Error()
				}
				results <- result{i, reason}
			}()
		}
		forged := func(i int) string {
			return ti.ec.SignWithHeader(map[string]any{"alg": "ES256", "kid": fmt.Sprintf("forged-%d", i)}, claims)
		}
		waiters := func() int {
			ti.keys.mu.Lock()
			defer ti.keys.mu.Unlock()
			if ti.keys.inFlight == nil {
				return -1
			}
			return ti.keys.inFlight.waiters
		}

		// The first unknown kid starts the fetch, which hangs at the issuer.
		ask(0, forged(0))
		synctest.Wait()
		if got := ti.Requests(); got != before+1 {
			t.Fatalf("%d requests reached the issuer, want 1", got-before)
		}
		// The window passes while it hangs (within the fetch timeout):
		// later kids still join this fetch.
		time.Sleep(5 * time.Second)
		for i := 1; i < last; i++ {
			ask(i, forged(i))
		}
		// One waits for a key the issuer publishes during the hang.
		next := newKey(t, "ES256", "ec-next")
		ti.Publish(ti.rsa, ti.ec, ti.ed, next)
		ask(last, next.Sign(claims))
		synctest.Wait()
		if got := waiters(); got != bound {
			t.Fatalf("%d requests wait for the fetch, want %d", got, bound)
		}

		// Beyond the bound: refused at once, the fetch still hanging.
		if got := ti.reason(t, forged(bound)); got != ReasonUnknownKey {
			t.Fatalf("a request beyond the bound: %q, want unknown_key", got)
		}

		// Each waiting request returns when its own context ends, while
		// the fetch still hangs, and none has fetched again.
		for i := range last {
			cancels[i]()
			r := <-results
			if r.i != i || r.reason != ReasonUnknownKey {
				t.Fatalf("after cancelling request %d: request %d answered %q, want %d unknown_key", i, r.i, r.reason, i)
			}
			if ti.Pending() != 1 || ti.Requests() != before+1 || errorFetches() != errorsBefore {
				t.Fatalf("request %d returned with %d requests pending at the issuer, %d made, %v failed fetches; want the one fetch still hanging",
					i, ti.Pending(), ti.Requests()-before, errorFetches()-errorsBefore)
			}
		}

		// The issuer answers: the request waiting for the new key shares
		// the fetch's result.
		release()
		if r := <-results; r.i != last || r.reason != "" {
			t.Fatalf("request %d answered %q once the fetch brought its key, want request %d accepted", r.i, r.reason, last)
		}
		defer cancels[last]()
		if got := ti.Requests(); got != before+1 {
			t.Fatalf("%d requests reached the issuer, want exactly 1", got-before)
		}

		// The window counts from the fetch's end: an unknown kid a moment
		// before it closes is refused at once; once it passes, it fetches
		// again.
		time.Sleep(5*time.Second - time.Nanosecond)
		if got := ti.reason(t, forged(bound+1)); got != ReasonUnknownKey || ti.Requests() != before+1 {
			t.Fatalf("unknown kid within the window after the fetch: %q with %d requests, want unknown_key and none more", got, ti.Requests()-before)
		}
		time.Sleep(time.Nanosecond)
		if got := ti.reason(t, forged(bound+2)); got != ReasonUnknownKey || ti.Requests() != before+2 {
			t.Fatalf("unknown kid after the window: %q with %d requests, want unknown_key after one more", got, ti.Requests()-before)
		}
	})
}
