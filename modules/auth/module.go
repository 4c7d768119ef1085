package auth

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	httpserver "github.com/plantstore/plantstore/modules/http"
)

// Config is the auth part of the program's configuration.
type Config struct {
	TokensFile string   // --tokens-file; "" for none
	Tokens     []string // --tokens
	RateLimit  float64  // --rate-limit: requests per second per token; 0 for no limit
	RateBurst  int      // --rate-burst: requests a token may send at once
}

// ErrNoTokens stops the program when no token is configured: it refuses to
// start rather than serve an API nobody can use, or worse, one everybody can.
var ErrNoTokens = errors.New("no API token configured: set --tokens-file or --tokens (PLANTSTORE_TOKENS_FILE, PLANTSTORE_TOKENS)")

// Module provides the API chain's "auth" middleware.
var Module = fx.Module("auth",
	fx.Provide(
		newTokens,
		newMiddleware,
		fx.Annotate(func(m *Middleware) httpserver.Middleware { return m.Wrap }, fx.ResultTags(`name:"auth"`)),
		fx.Annotate(newRateLimit, fx.ResultTags(`name:"rate_limit"`)),
	),
)

func newMiddleware(tokens *Tokens, reg prometheus.Registerer) (*Middleware, error) {
	return NewMiddleware(tokens, reg)
}

func newRateLimit(cfg Config, reg prometheus.Registerer) (httpserver.Middleware, error) {
	rl, err := NewRateLimiter(cfg.RateLimit, cfg.RateBurst, reg)
	if err != nil {
		return nil, err
	}
	return rl.Wrap, nil
}

func newTokens(cfg Config, lc fx.Lifecycle, log *zap.Logger) (*Tokens, error) {
	tokens := NewTokens(cfg.Tokens)
	if cfg.TokensFile != "" {
		src, err := NewFileSource(cfg.TokensFile, tokens, log)
		if err != nil {
			return nil, err
		}
		lc.Append(fx.Hook{OnStart: src.Start, OnStop: src.Stop})
	}
	if tokens.Len() == 0 {
		return nil, ErrNoTokens
	}
	return tokens, nil
}
