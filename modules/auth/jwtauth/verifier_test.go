package jwtauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/plantstore/plantstore/modules/auth/jwtauth/jwttest"
	"github.com/plantstore/plantstore/modules/auth/principal"
)

const audience = "plantstore"

// jwksOnly, as a Config's JWKSURL, makes startIssuer configure its
// issuer's JWKS URL alone (no discovery).
const jwksOnly = "jwks-only"

// testIssuer is an in-process issuer with an RS256, an ES256 and an EdDSA
// key published, and a verifier that found it by discovery. The key source
// and the verifier keep production time (time.Now): in a synctest bubble,
// the bubble's clock, which the test moves with time.Sleep.
type testIssuer struct {
	*jwttest.Issuer
	rsa, ec, ed *jwttest.Key
	keys        *KeySource
	verifier    *Verifier
	reg         *prometheus.Registry
}

func newKey(t *testing.T, alg, kid string) *jwttest.Key {
	t.Helper()
	k, err := jwttest.NewKey(alg, kid)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// startIssuer starts a key source against an in-process issuer (inside
// synctest.Test when the test moves time) with cfg's settings (Refresh:
// defaultRefresh unless set) and the production fetch timeout, window and
// waiter bound.
func startIssuer(t *testing.T, cfg Config) *testIssuer {
	t.Helper()
	iss := jwttest.NewInProcessIssuer()
	ti := &testIssuer{Issuer: iss, rsa: newKey(t, "RS256", "rsa-1"), ec: newKey(t, "ES256", "ec-1"), ed: newKey(t, "EdDSA", "ed-1")}
	iss.Publish(ti.rsa, ti.ec, ti.ed)
	switch {
	case cfg.JWKSURL == jwksOnly:
		cfg.JWKSURL = iss.JWKSURL
	case cfg.Issuer == "" && cfg.JWKSURL == "":
		cfg.Issuer = iss.URL
	}
	cfg.Audience = audience
	ti.reg = prometheus.NewRegistry()
	var err error
	ti.keys, err = NewKeySource(cfg, zaptest.NewLogger(t), ti.reg)
	if err != nil {
		t.Fatal(err)
	}
	ti.keys.client = &http.Client{Transport: iss.Transport()}
	if err := ti.keys.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ti.keys.Stop(context.Background()) })
	ti.verifier = NewVerifier(cfg, ti.keys)
	return ti
}

// reason is "" for an accepted token, else the refusal's reason.
func (ti *testIssuer) reason(t *testing.T, token string) string {
	t.Helper()
	p, err := ti.verifier.Authenticate(t.Context(), token)
	if err == nil {
		if p == nil {
			t.Fatal("Authenticate gave neither a principal nor an error")
		}
		return ""
	}
	if strings.Contains(err.Error(), token) {
		t.Fatalf("the error %q shows the token", err)
	}
	var f *failure
	if !errors.As(err, &f) {
		t.Fatalf("refusal %v is not a *Failure", err)
	}
	return f.Reason
}

func TestVerifierClaimsAndSignatures(t *testing.T) {
	ti := startIssuer(t, Config{})
	valid := func() map[string]any { return ti.Claims(audience, "svc-a", 10*time.Minute) }
	with := func(k string, v any) map[string]any {
		c := valid()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	now := time.Now()
	other := newKey(t, "RS256", "rsa-1") // same kid, another key: a forgery
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"RS256", ti.rsa.Sign(valid()), ""},
		{"ES256", ti.ec.Sign(valid()), ""},
		{"EdDSA", ti.ed.Sign(valid()), ""},
		{"audience among several", ti.rsa.Sign(with("aud", []string{"other", audience})), ""},
		{"expired within the leeway", ti.rsa.Sign(with("exp", now.Add(-10*time.Second).Unix())), ""},
		{"expired", ti.rsa.Sign(with("exp", now.Add(-2*time.Minute).Unix())), ReasonExpired},
		{"not yet valid", ti.rsa.Sign(with("nbf", now.Add(5*time.Minute).Unix())), ReasonNotYetValid},
		{"issued in the future", ti.rsa.Sign(with("iat", now.Add(5*time.Minute).Unix())), ReasonNotYetValid},
		{"nbf within the leeway", ti.rsa.Sign(with("nbf", now.Add(10*time.Second).Unix())), ""},
		{"wrong audience", ti.rsa.Sign(with("aud", "another-service")), ReasonBadAudience},
		{"no audience", ti.rsa.Sign(with("aud", nil)), ReasonBadAudience},
		{"wrong issuer", ti.rsa.Sign(with("iss", "https://evil.example")), ReasonBadIssuer},
		{"no exp", ti.rsa.Sign(with("exp", nil)), ReasonMissingClaim},
		{"no sub", ti.rsa.Sign(with("sub", nil)), ReasonMissingClaim},
		{"signed by another key under a known kid", other.Sign(valid()), ReasonBadSignature},
		{"payload swapped", swapPayload(ti.rsa.Sign(valid()), ti.rsa.Sign(with("sub", "admin"))), ReasonBadSignature},
		{"alg none", jwttest.Unsigned("rsa-1", valid()), ReasonBadAlgorithm},
		{"alg none without kid", jwttest.Unsigned("", valid()), ReasonBadAlgorithm},
		{"HMAC with the RSA public key", jwttest.HMAC("rsa-1", ti.rsa.PublicKeyBytes(), valid()), ReasonBadAlgorithm},
		{"HMAC with the EdDSA public key", jwttest.HMAC("ed-1", ti.ed.PublicKeyBytes(), valid()), ReasonBadAlgorithm},
		{"header alg not the key's", ti.ec.SignWithHeader(map[string]any{"alg": "RS256", "kid": "ec-1"}, valid()), ReasonBadAlgorithm},
		{"RS384 refused", ti.rsa.SignWithHeader(map[string]any{"alg": "RS384", "kid": "rsa-1"}, valid()), ReasonBadAlgorithm},
		{"three parts, not JSON", "abc.def.ghi", reasonMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ti.reason(t, tc.token); got != tc.reason {
				t.Fatalf("reason %q, want %q", got, tc.reason)
			}
		})
	}
	for _, notJWT := range []string{"static-token", "a.b", "a.b.c.d"} {
		if p, err := ti.verifier.Authenticate(t.Context(), notJWT); p != nil || !errors.Is(err, errNotJWT) {
			t.Fatalf("Authenticate(%q) = %v, %v; want errNotJWT", notJWT, p, err)
		}
	}
}

// swapPayload is a's header and signature around b's payload.
func swapPayload(a, b string) string {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	return pa[0] + "." + pb[1] + "." + pa[2]
}

func TestVerifierPrincipal(t *testing.T) {
	ti := startIssuer(t, Config{ScopeClaim: "scope", SubjectScopes: SubjectScopes{
		"system:serviceaccount:shop:web": {principal.ScopePlantsRead, principal.ScopePlantsWrite},
		"svc-scoped":                     {principal.ScopePlantsWrite},
	}})
	for _, tc := range []struct {
		name   string
		sub    string
		claims map[string]any
		want   []string
	}{
		{"scope string, unknown scopes dropped", "svc-a", map[string]any{"scope": "openid plants:read profile"}, []string{principal.ScopePlantsRead}},
		{"scp list", "svc-b", map[string]any{"scp": []string{"plants:write", "plants:read"}}, []string{principal.ScopePlantsWrite, principal.ScopePlantsRead}},
		{"scope as a list", "svc-c", map[string]any{"scope": []string{"plants:read"}}, []string{principal.ScopePlantsRead}},
		{"no scope claim", "svc-d", nil, nil},
		{"ServiceAccount mapped", "system:serviceaccount:shop:web", nil, []string{principal.ScopePlantsRead, principal.ScopePlantsWrite}},
		{"no-break space: one unknown scope", "svc-e", map[string]any{"scope": "plants:read\u00a0plants:write"}, nil},
		{"tab: one unknown scope", "svc-f", map[string]any{"scope": "plants:read\tplants:write"}, nil},
		{"spaces repeated and around", "svc-g", map[string]any{"scope": "  plants:write   plants:read "}, []string{principal.ScopePlantsWrite, principal.ScopePlantsRead}},
		{"claim and mapping joined", "svc-scoped", map[string]any{"scope": "plants:read plants:write"}, []string{principal.ScopePlantsRead, principal.ScopePlantsWrite}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := ti.Claims(audience, tc.sub, time.Minute)
			for k, v := range tc.claims {
				claims[k] = v
			}
			p, err := ti.verifier.Authenticate(t.Context(), ti.ec.Sign(claims))
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != "jwt:"+tc.sub || p.Name != tc.sub || p.AllScopes || !slices.Equal(p.Scopes, tc.want) {
				t.Fatalf("principal %+v, want jwt:%s named %s with %q", p, tc.sub, tc.sub, tc.want)
			}
		})
	}
}

// TestVerifierRotation: a token signed by a key the JWKS does not hold yet
// makes the source fetch at once, but not again within minKIDRefresh; once
// the issuer publishes the key, the next refresh finds it.
func TestVerifierRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ti := startIssuer(t, Config{})
		fetches := ti.JWKSFetches() // the start's
		if fetches != 1 {
			t.Fatalf("JWKS fetched %d times at start, want 1", fetches)
		}
		next := newKey(t, "ES256", "ec-2")
		claims := ti.Claims(audience, "svc-a", time.Minute)
		oldToken := ti.ec.Sign(claims)
		if got := ti.reason(t, oldToken); got != "" {
			t.Fatalf("old key: %q", got)
		}

		// Before the issuer publishes it: unknown, after one refresh.
		if got := ti.reason(t, next.Sign(claims)); got != ReasonUnknownKey {
			t.Fatalf("unpublished key: %q, want unknown_key", got)
		}
		if got := ti.JWKSFetches(); got != fetches+1 {
			t.Fatalf("JWKS fetched %d times, want %d: an unknown kid refreshes once", got, fetches+1)
		}
		// A flood of made-up kids within minKIDRefresh fetches nothing more.
		for i := range 20 {
			forged := next.SignWithHeader(map[string]any{"alg": "ES256", "kid": "forged-" + string(rune('a'+i))}, claims)
			if got := ti.reason(t, forged); got != ReasonUnknownKey {
				t.Fatalf("forged kid: %q", got)
			}
		}
		if got := ti.JWKSFetches(); got != fetches+1 {
			t.Fatalf("JWKS fetched %d times after a flood of unknown kids, want %d", got, fetches+1)
		}

		// The rotation: the issuer drops ec-1 and publishes ec-2.
		ti.Publish(ti.rsa, next, ti.ed)
		if got := ti.reason(t, next.Sign(claims)); got != ReasonUnknownKey {
			t.Fatalf("published key within minKIDRefresh of the last refresh: %q, want unknown_key", got)
		}
		time.Sleep(5 * time.Second) // minKIDRefresh
		if got := ti.reason(t, next.Sign(claims)); got != "" {
			t.Fatalf("published key after minKIDRefresh: %q, want it accepted", got)
		}
		if got := ti.JWKSFetches(); got != fetches+2 {
			t.Fatalf("JWKS fetched %d times, want %d", got, fetches+2)
		}
		// The token verified with the retired key stays good until it expires
		// (it is cached); a new one signed by it is refused.
		if got := ti.reason(t, oldToken); got != "" {
			t.Fatalf("cached token of the retired key: %q", got)
		}
		if got := ti.reason(t, ti.ec.Sign(ti.Claims(audience, "svc-b", time.Minute))); got != ReasonUnknownKey {
			t.Fatalf("new token of the retired key: %q, want unknown_key", got)
		}
	})
}

// TestVerifierIssuerDown: a failed refresh keeps the keys in use, and
// plantstore_auth_jwks_up says so.
func TestVerifierIssuerDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ti := startIssuer(t, Config{})
		gauge := func() float64 { return testutil.ToFloat64(ti.keys.up) }
		if gauge() != 1 {
			t.Fatalf("plantstore_auth_jwks_up = %v after a good start", gauge())
		}
		ti.SetDown(true)
		if err := ti.keys.Refresh(t.Context()); err == nil {
			t.Fatal("Refresh with the issuer down succeeded")
		}
		if gauge() != 0 {
			t.Fatalf("plantstore_auth_jwks_up = %v with the issuer down", gauge())
		}
		if got := ti.reason(t, ti.rsa.Sign(ti.Claims(audience, "svc-a", time.Minute))); got != "" {
			t.Fatalf("a token of a cached key with the issuer down: %q", got)
		}
		time.Sleep(5 * time.Second) // minKIDRefresh
		if got := ti.reason(t, newKey(t, "EdDSA", "ed-9").Sign(ti.Claims(audience, "svc-a", time.Minute))); got != ReasonUnknownKey {
			t.Fatalf("unknown kid with the issuer down: %q", got)
		}
		if got := testutil.ToFloat64(ti.keys.fetchCount.WithLabelValues("error")); got != 2 {
			t.Fatalf("fetch errors = %v, want 2", got)
		}
		ti.SetDown(false)
		if err := ti.keys.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		if gauge() != 1 {
			t.Fatalf("plantstore_auth_jwks_up = %v once the issuer is back", gauge())
		}
		if err := testutil.GatherAndCompare(ti.reg, strings.NewReader(`
# HELP plantstore_auth_jwks_keys JWT signing keys in use.
# TYPE plantstore_auth_jwks_keys gauge
plantstore_auth_jwks_keys 3
`), "plantstore_auth_jwks_keys"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestVerifierIssuerDownAtStart: the program starts; JWTs are refused until
// the issuer answers.
func TestVerifierIssuerDownAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iss := jwttest.NewInProcessIssuer()
		key := newKey(t, "EdDSA", "ed-1")
		iss.Publish(key)
		iss.SetDown(true)
		cfg := Config{JWKSURL: iss.JWKSURL, Audience: audience, Refresh: defaultRefresh}
		keys, err := NewKeySource(cfg, zaptest.NewLogger(t), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		keys.client = &http.Client{Transport: iss.Transport()}
		if err := keys.Start(t.Context()); err != nil {
			t.Fatalf("Start with the issuer down: %v", err)
		}
		defer func() { _ = keys.Stop(context.Background()) }()
		v := NewVerifier(cfg, keys)
		token := key.Sign(iss.Claims(audience, "svc-a", time.Minute))
		var f *failure
		if _, err := v.Authenticate(t.Context(), token); !errors.As(err, &f) || f.Reason != ReasonUnknownKey {
			t.Fatalf("with no keys yet: %v", err)
		}
		iss.SetDown(false)
		if err := keys.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		// The JWKS URL alone does not check iss: the keys are the issuer's.
		if _, err := v.Authenticate(t.Context(), token); err != nil {
			t.Fatal(err)
		}
	})
}

// TestVerifierCache: a token is verified once, then served from the cache
// until its exp, even with its key gone; after exp it is verified again.
func TestVerifierCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ti := startIssuer(t, Config{})
		token := ti.rsa.Sign(ti.Claims(audience, "svc-a", time.Minute))
		first, err := ti.verifier.Authenticate(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		ti.Publish() // every key gone
		if err := ti.keys.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		again, err := ti.verifier.Authenticate(t.Context(), token)
		if err != nil || again != first {
			t.Fatalf("second use = %p, %v; want the cached principal %p", again, err, first)
		}
		time.Sleep(time.Minute + leeway + time.Second)
		if got := ti.reason(t, token); got != ReasonUnknownKey {
			t.Fatalf("after exp: %q, want it verified again (and its key is gone)", got)
		}
	})
}

func TestVerifiedCacheBound(t *testing.T) {
	c := newVerified(2)
	now := time.Now()
	p := &principal.Principal{ID: "jwt:a"}
	c.put([32]byte{1}, p, now.Add(-time.Second), now) // expired
	c.put([32]byte{2}, p, now.Add(time.Minute), now)
	c.put([32]byte{3}, p, now.Add(time.Minute), now) // drops the expired one
	if len(c.entries) != 2 || c.get([32]byte{2}, now) != p || c.get([32]byte{3}, now) != p {
		t.Fatalf("entries %v", c.entries)
	}
	c.put([32]byte{4}, p, now.Add(time.Minute), now) // full of current ones: starts over
	if len(c.entries) != 1 || c.get([32]byte{4}, now) != p {
		t.Fatalf("entries %v", c.entries)
	}
}

// TestKeySourceRefreshesInBackground, on synctest's clock with the
// production interval (5 min): a key the issuer publishes is picked up by the
// background refresh exactly defaultRefresh after the last fetch, with no
// token asking for it, one fetch per interval; Stop ends it.
func TestKeySourceRefreshesInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ti := startIssuer(t, Config{JWKSURL: jwksOnly})
		next := newKey(t, "EdDSA", "ed-2")
		ti.Publish(ti.rsa, next)
		time.Sleep(5*time.Minute - time.Second)
		synctest.Wait()
		if _, ok := ti.keys.keys.Load().lookup("ed-2"); ok || ti.JWKSFetches() != 1 {
			t.Fatalf("a second before the interval: %d fetches, the new key in use %v; want the start's fetch alone", ti.JWKSFetches(), ok)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := ti.keys.keys.Load().lookup("ed-2"); !ok || ti.JWKSFetches() != 2 {
			t.Fatalf("at the interval: %d fetches, the new key in use %v; want 2 and the key", ti.JWKSFetches(), ok)
		}
		time.Sleep(50 * time.Minute)
		synctest.Wait()
		if got := ti.JWKSFetches(); got != 12 {
			t.Fatalf("%d fetches after 11 intervals, want 12", got)
		}
		if err := ti.keys.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Minute)
		synctest.Wait()
		if got := ti.JWKSFetches(); got != 12 {
			t.Fatalf("%d fetches after Stop, want still 12", got)
		}
	})
}

// TestKeySourceRetriesAtRetryDelay, on synctest's clock with the
// production delays (retry 15 s, refresh 5 min): while the issuer is down the background refresh
// tries again every retryDelay, not every defaultRefresh; once a fetch
// works it goes back to defaultRefresh.
func TestKeySourceRetriesAtRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iss := jwttest.NewInProcessIssuer()
		iss.Publish(newKey(t, "EdDSA", "ed-1"))
		iss.SetDown(true)
		cfg := Config{JWKSURL: iss.JWKSURL, Audience: audience, Refresh: defaultRefresh}
		keys, err := NewKeySource(cfg, zaptest.NewLogger(t), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		keys.client = &http.Client{Transport: iss.Transport()}
		if err := keys.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = keys.Stop(context.Background()) }()
		errorFetches := func() float64 { return testutil.ToFloat64(keys.fetchCount.WithLabelValues("error")) }

		// The start's fetch and one every retryDelay: 1 + 4 in a minute.
		time.Sleep(4*15*time.Second + time.Second)
		synctest.Wait()
		if got := iss.Requests(); got != 5 || errorFetches() != 5 {
			t.Fatalf("%d requests, %v failed fetches after %v down; want 5 and 5", got, errorFetches(), 4*15*time.Second+time.Second)
		}
		// Back up: the next retry works, and the one after comes a full
		// interval later.
		iss.SetDown(false)
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if got := iss.Requests(); got != 6 || testutil.ToFloat64(keys.up) != 1 {
			t.Fatalf("%d requests, up %v once the issuer is back; want 6 and up", got, testutil.ToFloat64(keys.up))
		}
		time.Sleep(5*time.Minute - 2*time.Second)
		synctest.Wait()
		if got := iss.Requests(); got != 6 {
			t.Fatalf("%d requests just before the interval after a good fetch, want 6", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := iss.Requests(); got != 7 {
			t.Fatalf("%d requests an interval after a good fetch, want 7", got)
		}
	})
}
