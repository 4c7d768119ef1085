package jwtauth

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// roundTripFunc is an in-process transport: sockets do not work inside a
// synctest bubble.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKeySourceWindowUnderAHangingIssuer, on synctest's clock: with the
// issuer hanging, requests with unknown kids each return at their own
// deadline (the i-th after i seconds, not after i fetches of 10 s), one
// fetch reaches the issuer and is abandoned after fetchTimeout; an unknown
// kid within minKIDRefresh of that end is refused at once, and only after
// it does the next fetch go out.
func TestKeySourceWindowUnderAHangingIssuer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		hang := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		cfg := Config{JWKSURL: "http://issuer.test/jwks", Audience: audience, Refresh: time.Hour}
		keys, err := NewKeySource(cfg, zap.NewNop(), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		keys.client = &http.Client{Transport: hang}
		defer func() { _ = keys.Stop(context.Background()) }()
		v := NewVerifier(cfg, keys)
		signer := newKey(t, "ES256", "signer")
		token := func(kid string) string {
			claims := map[string]any{"aud": audience, "sub": "svc-a", "exp": time.Now().Add(time.Hour).Unix()}
			return signer.SignWithHeader(map[string]any{"alg": "ES256", "kid": kid}, claims)
		}
		// ask sends a token with an unknown kid under a deadline and says
		// how long it took and why it was refused.
		ask := func(kid string, deadline time.Duration) (time.Duration, string) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			_, err := v.Authenticate(ctx, token(kid))
			var f *failure
			if !errors.As(err, &f) {
				t.Errorf("kid %s: %v, want a refusal", kid, err)
				return time.Since(start), ""
			}
			return time.Since(start), f.Reason
		}

		const n = 5
		var wg sync.WaitGroup
		took := make([]time.Duration, n)
		reasons := make([]string, n)
		for i := range n {
			wg.Go(func() { took[i], reasons[i] = ask("kid-"+string(rune('a'+i)), time.Duration(i+1)*time.Second) })
		}
		wg.Wait()
		for i := range n {
			if took[i] != time.Duration(i+1)*time.Second || reasons[i] != ReasonUnknownKey {
				t.Errorf("request %d: %s after %v, want unknown_key at its deadline, %v", i, reasons[i], took[i], time.Duration(i+1)*time.Second)
			}
		}
		if got := calls.Load(); got != 1 {
			t.Fatalf("%d fetches reached the issuer, want 1", got)
		}

		// The fetch is abandoned at fetchTimeout (10 s from the start);
		// the window counts from there.
		time.Sleep(fetchTimeout - n*time.Second)
		synctest.Wait()
		time.Sleep(minKIDRefresh - time.Second)
		if took, reason := ask("kid-late", time.Minute); took != 0 || reason != ReasonUnknownKey || calls.Load() != 1 {
			t.Fatalf("within the window after the fetch: %s after %v with %d fetches, want unknown_key at once and no fetch", reason, took, calls.Load())
		}
		time.Sleep(time.Second)
		if took, reason := ask("kid-next", 2*time.Second); took != 2*time.Second || reason != ReasonUnknownKey || calls.Load() != 2 {
			t.Fatalf("after the window: %s after %v with %d fetches, want a second fetch, waited for until the deadline", reason, took, calls.Load())
		}
	})
}
