package auth

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// RegisterFlags defines the auth flags on fs, each filling its field of c
// with its default. --tokens is split on commas as it is set (splitList).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Float64Var(&c.RateLimit, "rate-limit", 0, "API requests per second allowed per token, 0 for no limit; more are answered 429")
	fs.IntVar(&c.RateBurst, "rate-burst", 20, "API requests a token may send at once under --rate-limit")
	fs.StringVar(&c.TokensFile, "tokens-file", "", "file of API tokens, one per line as <token> [name=<name>] [<scope> ...] (no scope: every scope), # comments; reloaded on change")
	c.Tokens = nil
	fs.Var(tokenList{&c.Tokens}, "tokens", "comma-separated API tokens (for development; prefer --tokens-file)")
	c.JWT.RegisterFlags(fs)
}

// tokenList is --tokens: setting it replaces the list, so that the flag
// wins over its environment twin rather than adding to it.
type tokenList struct{ list *[]string }

func (t tokenList) String() string {
	if t.list == nil {
		return ""
	}
	return strings.Join(*t.list, ",")
}

func (t tokenList) Set(s string) error {
	*t.list = splitList(s)
	return nil
}

// Validate reports every value of c that its flag does not accept, one
// error per problem, each naming the flag (errors.Join's parts). A config
// without any token, and without JWTs, is refused (errNoTokens).
func (c Config) Validate() error {
	var errs []error
	// NaN fails both comparisons: written so that it is refused too.
	if !(c.RateLimit >= 0) {
		errs = append(errs, fmt.Errorf("--rate-limit %v: must not be negative (0 turns it off)", c.RateLimit))
	}
	if c.RateLimit != 0 && c.RateBurst <= 0 {
		errs = append(errs, fmt.Errorf("--rate-burst %d: must be positive", c.RateBurst))
	}
	if c.TokensFile == "" && len(c.Tokens) == 0 && !c.JWT.Enabled() {
		errs = append(errs, errNoTokens)
	}
	errs = append(errs, c.JWT.Validate())
	return errors.Join(errs...)
}
