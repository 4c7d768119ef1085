package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/plantstore/plantstore/modules/auth/jwtauth"
	"github.com/plantstore/plantstore/modules/auth/jwtauth/jwttest"
	"github.com/plantstore/plantstore/modules/auth/principal"
)

// startJWT is a loopback issuer with one ES256 key, and the verifier of its
// tokens for audience "plantstore".
func startJWT(t testing.TB) (*jwttest.Issuer, *jwttest.Key, *jwtauth.Verifier) {
	t.Helper()
	iss, err := jwttest.NewIssuer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	key, err := jwttest.NewKey("ES256", "ec-1")
	if err != nil {
		t.Fatal(err)
	}
	iss.Publish(key)
	cfg := jwtauth.Config{Issuer: iss.URL, Audience: "plantstore", ScopeClaim: "scope", Refresh: time.Hour}
	keys, err := jwtauth.NewKeySource(cfg, zaptest.NewLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = keys.Stop(context.Background()) })
	return iss, key, jwtauth.NewVerifier(cfg, keys)
}

// TestStaticAndJWTSideBySide: the middleware asks the static tokens, then
// the JWT verifier; a refusal counts the JWT's reason when the token was a
// JWT, "invalid" when it was nothing anyone knows.
func TestStaticAndJWTSideBySide(t *testing.T) {
	iss, key, verifier := startJWT(t)
	reg := prometheus.NewRegistry()
	m, err := newAuthMiddleware(authenticators{newTokenSet([]string{"static-token"}), verifier}, reg)
	if err != nil {
		t.Fatal(err)
	}
	var caller *principal.Principal
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller = principal.FromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}))
	claims := iss.Claims("plantstore", "svc-a", time.Minute)
	claims["scope"] = "plants:read"
	expired := iss.Claims("plantstore", "svc-a", -time.Hour)
	wrongAud := iss.Claims("another", "svc-a", time.Minute)
	for _, tc := range []struct {
		name, token string
		status      int
		caller      string
		reason      string
		message     string
	}{
		{name: "static", token: "static-token", status: 204, caller: TokenName(sha256Of("static-token"))},
		{name: "JWT", token: key.Sign(claims), status: 204, caller: "svc-a"},
		{name: "unknown static", token: "nope", status: 401, reason: reasonInvalid, message: "the bearer token is not valid"},
		{name: "expired JWT", token: key.Sign(expired), status: 401, reason: jwtauth.ReasonExpired, message: "the bearer token has expired"},
		{name: "JWT for another audience", token: key.Sign(wrongAud), status: 401, reason: jwtauth.ReasonBadAudience, message: "the bearer token is not valid"},
		{name: "alg none", token: jwttest.Unsigned("ec-1", claims), status: 401, reason: jwtauth.ReasonBadAlgorithm, message: "the bearer token is not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller = nil
			before := testutil.ToFloat64(m.failures.WithLabelValues(tc.reason))
			req := httptest.NewRequest(http.MethodGet, "/plants", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.status == 204 {
				if caller == nil || caller.Name != tc.caller {
					t.Fatalf("caller %+v, want %q", caller, tc.caller)
				}
				return
			}
			var body struct {
				Error   int    `json:"error"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != 401 || body.Message != tc.message {
				t.Fatalf("body %s, want {401, %q}", rec.Body, tc.message)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="plantstore", error="invalid_token"` {
				t.Fatalf("WWW-Authenticate = %q", got)
			}
			if got := testutil.ToFloat64(m.failures.WithLabelValues(tc.reason)); got != before+1 {
				t.Fatalf("failures{reason=%q} = %v, want %v", tc.reason, got, before+1)
			}
		})
	}
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }
