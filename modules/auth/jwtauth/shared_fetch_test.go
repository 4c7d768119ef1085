package jwtauth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// waitFor polls cond until it holds; it fails the test only when cond
// never holds, so it asserts no duration.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestKeySourceSharesOneFetch: with the issuer hanging, requests with
// unknown kids share the one fetch under way instead of queueing for a
// fetch each: exactly one request reaches the issuer, however long it
// hangs (the window passing included); each waiting request returns as
// soon as its own context ends, while the fetch still hangs; beyond
// maxWaiters, requests are refused at once; a request waiting for a key
// the fetch brings gets it; and the window starts again when the fetch
// ends.
func TestKeySourceSharesOneFetch(t *testing.T) {
	// The JWKS URL alone: one fetch is one request to the issuer.
	ti := startIssuer(t, Config{JWKSURL: jwksOnly})
	ti.keys.fetchTimeout = time.Hour // the fetch hangs as long as the issuer does
	ti.keys.maxWaiters = 8
	claims := ti.Claims(audience, "svc-a", time.Minute)
	errorFetches := func() float64 { return testutil.ToFloat64(ti.keys.fetchCount.WithLabelValues("error")) }
	before, errorsBefore := ti.Requests(), errorFetches()

	release := ti.Hold()
	defer release()

	type result struct {
		i      int
		reason string
	}
	results := make(chan result, 8)
	cancels := make([]context.CancelFunc, 8)
	ask := func(i int, token string) {
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i] = cancel
		go func() {
			_, err := ti.verifier.Authenticate(ctx, token)
			reason := ""
			var f *Failure
			if errors.As(err, &f) {
				reason = f.Reason
			} else if err != nil {
				reason = err.Error()
			}
			results <- result{i, reason}
		}()
	}
	forged := func(kid string) string {
		return ti.ec.SignWithHeader(map[string]any{"alg": "ES256", "kid": kid}, claims)
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
	ask(0, forged("forged-0"))
	waitFor(t, "the fetch reaches the issuer", func() bool { return ti.Requests() == before+1 })
	// The window passes while it hangs: later kids still join this fetch.
	ti.clock.add(MinKIDRefresh)
	for i := 1; i < 7; i++ {
		ask(i, forged("forged-"+string(rune('0'+i))))
	}
	// One waits for a key the issuer publishes during the hang.
	next := newKey(t, "ES256", "ec-next")
	ti.Publish(ti.rsa, ti.ec, ti.ed, next)
	ask(7, next.Sign(claims))
	waitFor(t, "eight requests wait for the one fetch", func() bool { return waiters() == 8 })

	// Beyond maxWaiters: refused at once, the fetch still hanging.
	if got := ti.reason(t, forged("forged-extra")); got != ReasonUnknownKey {
		t.Fatalf("a request beyond maxWaiters: %q, want unknown_key", got)
	}

	// Each waiting request returns when its own context ends, while the
	// fetch still hangs, and none has fetched again.
	for i := range 7 {
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

	// The issuer answers: the request waiting for the new key shares the
	// fetch's result.
	release()
	if r := <-results; r.i != 7 || r.reason != "" {
		t.Fatalf("request %d answered %q once the fetch brought its key, want request 7 accepted", r.i, r.reason)
	}
	defer cancels[7]()
	if got := ti.Requests(); got != before+1 {
		t.Fatalf("%d requests reached the issuer, want exactly 1", got-before)
	}

	// The window counts from the fetch's end: an unknown kid now is
	// refused at once; once the window passes, it fetches again.
	if got := ti.reason(t, forged("forged-8")); got != ReasonUnknownKey || ti.Requests() != before+1 {
		t.Fatalf("unknown kid right after the fetch: %q with %d requests, want unknown_key and none more", got, ti.Requests()-before)
	}
	ti.clock.add(MinKIDRefresh)
	if got := ti.reason(t, forged("forged-9")); got != ReasonUnknownKey || ti.Requests() != before+2 {
		t.Fatalf("unknown kid after the window: %q with %d requests, want unknown_key after one more", got, ti.Requests()-before)
	}
}
