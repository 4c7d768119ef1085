package jwtauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// Verifier is the JWT authenticator: it turns a signed, current token for
// our audience from the configured issuer into a Principal named by its
// sub, holding the scopes of its scope claim and those its sub is granted
// by configuration.
type Verifier struct {
	keys          *KeySource
	issuer        string // "" with a JWKS URL alone: iss is then not checked
	audience      string
	scopeClaim    string
	subjectScopes SubjectScopes
	cache         *verified
}

// NewVerifier verifies tokens against keys as cfg says.
func NewVerifier(cfg Config, keys *KeySource) *Verifier {
	claim := cfg.ScopeClaim
	if claim == "" {
		claim = "scope"
	}
	return &Verifier{
		keys: keys, issuer: cfg.Issuer, audience: cfg.Audience, scopeClaim: claim,
		subjectScopes: cfg.SubjectScopes, cache: newVerified(maxVerified),
	}
}

// errNotJWT is the answer for a token that is not shaped like a JWT (three
// dot-separated parts): most likely a static token that is not listed, so
// the middleware counts it as a plain invalid token.
var errNotJWT = errors.New("not a JWT")

// Authenticate implements auth.Authenticator. A refusal is a *Failure
// (but errNotJWT).
func (v *Verifier) Authenticate(ctx context.Context, token string) (*principal.Principal, error) {
	if strings.Count(token, ".") != 2 {
		return nil, errNotJWT
	}
	d := sha256.Sum256([]byte(token))
	now := time.Now()
	if p := v.cache.get(d, now); p != nil {
		return p, nil
	}
	p, exp, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	v.cache.put(d, p, exp, now)
	return p, nil
}

func (v *Verifier) verify(ctx context.Context, token string) (*principal.Principal, time.Time, error) {
	msg, err := jws.ParseString(token)
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, time.Time{}, fail(reasonMalformed, errors.New("not a compact JWS with one signature"))
	}
	hdr := msg.Signatures()[0].ProtectedHeaders()
	name, _ := hdr.Algorithm()
	alg, ok := allowed[name.String()]
	if !ok {
		return nil, time.Time{}, fail(ReasonBadAlgorithm, fmt.Errorf("alg %q is not RS256, ES256 or EdDSA", name.String()))
	}
	kid, _ := hdr.KeyID()
	key, ok := v.keys.key(ctx, kid)
	if !ok {
		return nil, time.Time{}, fail(ReasonUnknownKey, fmt.Errorf("no key with kid %q", kid))
	}
	if key.alg != "" && key.alg != alg.String() {
		return nil, time.Time{}, fail(ReasonBadAlgorithm, fmt.Errorf("alg %s, but key %q is for %s", alg, kid, key.alg))
	}
	// VerifyCompactFast also refuses a key of another type than alg's.
	payload, err := jws.VerifyCompactFast(key.raw, []byte(token), alg)
	if err != nil {
		return nil, time.Time{}, fail(ReasonBadSignature, err)
	}
	opts := []jwt.ParseOption{
		jwt.WithVerify(false), // verified above, with the key the kid named
		jwt.WithAudience(v.audience),
		jwt.WithAcceptableSkew(leeway),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithRequiredClaim(jwt.SubjectKey),
		jwt.WithClock(jwt.ClockFunc(time.Now)),
	}
	if v.issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.issuer))
	}
	tok, err := jwt.Parse(payload, opts...)
	if err != nil {
		return nil, time.Time{}, fail(claimReason(err), err)
	}
	sub, _ := tok.Subject()
	exp, _ := tok.Expiration()
	return &principal.Principal{ID: "jwt:" + sub, Name: sub, Scopes: v.scopes(tok, sub)}, exp, nil
}

// claimReason classifies a claim validation error.
func claimReason(err error) string {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return ReasonExpired
	case errors.Is(err, jwt.TokenNotYetValidError()), errors.Is(err, jwt.InvalidIssuedAtError()):
		return ReasonNotYetValid
	case errors.Is(err, jwt.InvalidAudienceError()):
		return ReasonBadAudience
	case errors.Is(err, jwt.InvalidIssuerError()):
		return ReasonBadIssuer
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return ReasonMissingClaim
	}
	return reasonMalformed
}

// scopes are the known scopes in the token's scope claim (a
// space-separated string, or a list; "scp" when the claim is absent) and
// those configured for its sub. Scopes we do not know (an IdP's "openid",
// "profile") are dropped.
func (v *Verifier) scopes(tok jwt.Token, sub string) []string {
	var out []string
	add := func(scope string) {
		if slices.Contains(principal.Scopes, scope) && !slices.Contains(out, scope) {
			out = append(out, scope)
		}
	}
	var claim any
	if tok.Get(v.scopeClaim, &claim) != nil {
		_ = tok.Get("scp", &claim)
	}
	switch c := claim.(type) {
	case string:
		for _, s := range principal.ScopeTokens(c) {
			add(s)
		}
	case []any:
		for _, s := range c {
			if s, ok := s.(string); ok {
				add(s)
			}
		}
	case []string:
		for _, s := range c {
			add(s)
		}
	}
	for _, s := range v.subjectScopes[sub] {
		add(s)
	}
	return out
}
