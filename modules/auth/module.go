package auth

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/jwtauth"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// Config is the auth part of the program's configuration.
type Config struct {
	TokensFile string   // --tokens-file; "" for none
	Tokens     []string // --tokens
	RateLimit  float64  // --rate-limit: requests per second per token; 0 for no limit
	RateBurst  int      // --rate-burst: requests a token may send at once
	JWT        jwtauth.Config
}

// errNoTokens stops the program when no token is configured: it refuses to
// start rather than serve an API nobody can use, or worse, one everybody can.
var errNoTokens = errors.New("no API token configured: set --tokens-file or --tokens (PLANTSTORE_TOKENS_FILE, PLANTSTORE_TOKENS), or accept JWTs with --jwt-issuer or --jwt-jwks-url")

// Module provides the API chain's "auth" middleware, the routes' "scope"
// check, and the "rate_limit".
var Module = fx.Module("auth",
	fx.Provide(
		newTokens,
		newJWT,
		newMiddleware,
		fx.Annotate(func(m *authMiddleware) httpapi.Middleware { return m.Wrap }, fx.ResultTags(`name:"auth"`)),
		fx.Annotate(func(m *authMiddleware) httpapi.Middleware { return m.RequireScope }, fx.ResultTags(`name:"scope"`)),
		fx.Annotate(newRateLimit, fx.ResultTags(`name:"rate_limit"`)),
	),
)

// newMiddleware asks the static tokens first (a digest and a comparison),
// then the JWT verifier when JWTs are on.
func newMiddleware(tokens *tokenSet, jwt *jwtauth.Verifier, reg prometheus.Registerer) (*authMiddleware, error) {
	authns := authenticators{tokens}
	if jwt != nil {
		authns = append(authns, jwt)
	}
	return newAuthMiddleware(authns, reg)
}

// jwtResult is the JWT verifier and its keys, both nil when JWTs are off.
type jwtResult struct {
	fx.Out

	Verifier *jwtauth.Verifier
	Keys     *jwtauth.KeySource
}

// newJWT builds the JWT verifier when JWTs are on. Its keys are fetched at
// start and refreshed until stop.
func newJWT(cfg Config, lc fx.Lifecycle, log *zap.Logger, reg prometheus.Registerer) (jwtResult, error) {
	if !cfg.JWT.Enabled() {
		return jwtResult{}, nil
	}
	keys, err := jwtauth.NewKeySource(cfg.JWT, log, reg)
	if err != nil {
		return jwtResult{}, err
	}
	lc.Append(fx.Hook{OnStart: keys.Start, OnStop: keys.Stop})
	return jwtResult{Verifier: jwtauth.NewVerifier(cfg.JWT, keys), Keys: keys}, nil
}

func newRateLimit(cfg Config, reg prometheus.Registerer) (httpapi.Middleware, error) {
	rl, err := newRateLimiter(cfg.RateLimit, cfg.RateBurst, reg)
	if err != nil {
		return nil, err
	}
	return rl.Wrap, nil
}

func newTokens(cfg Config, lc fx.Lifecycle, log *zap.Logger) (*tokenSet, error) {
	tokens := newTokenSet(cfg.Tokens)
	if cfg.TokensFile != "" {
		src, err := newFileSource(cfg.TokensFile, tokens, log)
		if err != nil {
			return nil, err
		}
		lc.Append(fx.Hook{OnStart: src.Start, OnStop: src.Stop})
	}
	if tokens.Len() == 0 && !cfg.JWT.Enabled() {
		return nil, errNoTokens
	}
	return tokens, nil
}
