// Package jwtauth accepts JWT bearer tokens from the operator's OIDC
// issuer (Kubernetes' API server for projected ServiceAccount tokens
// among them): the JWKS is fetched ahead of requests and kept fresh in the
// background, a token is verified once and then served from a cache by its
// digest until it expires.
//
// Library: github.com/lestrrat-go/jwx/v3 does the JOSE work (JWK parsing,
// JWS verification, claim validation): one well-kept module that covers
// RSA, ECDSA and EdDSA keys, where golang-jwt/jwt v5 would need a second
// module to parse JWKs. The key fetching (KeySource) is ours, small, so
// that its throttle on unknown kids and its health metric are exactly what
// we document.
package jwtauth

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// Config is the JWT part of the auth configuration. JWTs are off unless
// Issuer or JWKSURL is set.
type Config struct {
	Issuer     string // --jwt-issuer: the iss tokens must carry; its discovery document names the JWKS
	JWKSURL    string // --jwt-jwks-url: fetch keys from here (no discovery)
	Audience   string // --jwt-audience: required when JWTs are on
	ScopeClaim string // --jwt-scope-claim: space-separated string or list; "scp" is read when absent
	// SubjectScopes grants scopes by the token's sub (--jwt-subject-scopes),
	// for tokens without a scope claim: Kubernetes ServiceAccount tokens.
	SubjectScopes SubjectScopes
	CAFile        string        // --jwt-ca-file: PEM roots for the issuer's TLS; "" for the system's
	FetchToken    string        // --jwt-fetch-token-file: bearer token file sent to the issuer (Kubernetes needs one)
	Refresh       time.Duration // --jwt-jwks-refresh: how often the keys are fetched again
}

// leeway is the clock skew allowed on exp, nbf and iat: small, so that an
// expired token is not honoured for long, and enough for clocks kept by NTP.
const leeway = 30 * time.Second

// defaultRefresh is --jwt-jwks-refresh's default.
const defaultRefresh = 5 * time.Minute

// Enabled reports whether JWTs are accepted.
func (c Config) Enabled() bool { return c.Issuer != "" || c.JWKSURL != "" }

// RegisterFlags defines the JWT flags on fs, each filling its field of c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Issuer, "jwt-issuer", "", "accept JWTs from this OIDC issuer (its iss); keys found by discovery at <issuer>/.well-known/openid-configuration unless --jwt-jwks-url")
	fs.StringVar(&c.JWKSURL, "jwt-jwks-url", "", "accept JWTs signed by the keys at this JWKS URL")
	fs.StringVar(&c.Audience, "jwt-audience", "", "the aud JWTs must carry; required when JWTs are on")
	fs.StringVar(&c.ScopeClaim, "jwt-scope-claim", "scope", "the JWT claim holding scopes, space-separated or a list (scp is read when it is absent)")
	c.SubjectScopes = nil
	fs.Var(&c.SubjectScopes, "jwt-subject-scopes", "scopes granted by JWT subject, for tokens without a scope claim: sub=scope scope,sub2=scope")
	fs.StringVar(&c.CAFile, "jwt-ca-file", "", "PEM file of the CAs that sign the issuer's TLS certificate (default: the system's)")
	fs.StringVar(&c.FetchToken, "jwt-fetch-token-file", "", "file holding a bearer token sent when fetching discovery and keys (in Kubernetes: the pod's ServiceAccount token)")
	fs.DurationVar(&c.Refresh, "jwt-jwks-refresh", defaultRefresh, "how often the JWT keys are fetched again")
}

// Validate reports each value its flag does not accept, naming the flag.
func (c Config) Validate() error {
	var errs []error
	if !c.Enabled() {
		for flag, v := range map[string]bool{"--jwt-audience": c.Audience != "", "--jwt-subject-scopes": len(c.SubjectScopes) > 0, "--jwt-ca-file": c.CAFile != "", "--jwt-fetch-token-file": c.FetchToken != ""} {
			if v {
				errs = append(errs, fmt.Errorf("%s: set --jwt-issuer or --jwt-jwks-url to turn JWTs on", flag))
			}
		}
		sortErrors(errs)
		return errors.Join(errs...)
	}
	if c.Issuer != "" {
		if err := checkURL(c.Issuer); err != nil {
			errs = append(errs, fmt.Errorf("--jwt-issuer %q: %w", c.Issuer, err))
		}
	}
	if c.JWKSURL != "" {
		if err := checkURL(c.JWKSURL); err != nil {
			errs = append(errs, fmt.Errorf("--jwt-jwks-url %q: %w", c.JWKSURL, err))
		}
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("--jwt-audience: required when JWTs are on (--jwt-issuer or --jwt-jwks-url)"))
	}
	if strings.TrimSpace(c.ScopeClaim) == "" {
		errs = append(errs, errors.New("--jwt-scope-claim: must not be empty"))
	}
	if c.Refresh < time.Second {
		errs = append(errs, fmt.Errorf("--jwt-jwks-refresh %v: must be at least 1s", c.Refresh))
	}
	return errors.Join(errs...)
}

func sortErrors(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

// checkURL accepts an absolute https URL, or http on a loopback host (a
// test's issuer, a sidecar): keys fetched in clear could be replaced on the
// way.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want an absolute URL without query or fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
	}
	return errors.New("want https (http only on a loopback host)")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SubjectScopes are the scopes granted by sub, the --jwt-subject-scopes
// flag: "sub=scope scope,sub2=scope". A subject may not hold a comma or an
// equals sign; Kubernetes' "system:serviceaccount:<namespace>:<name>" does
// neither.
type SubjectScopes map[string][]string

func (s SubjectScopes) String() string {
	var parts []string
	for _, sub := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, sub+"="+strings.Join(s[sub], " "))
	}
	return strings.Join(parts, ",")
}

// Set replaces the mapping (a flag wins over its environment twin).
func (s *SubjectScopes) Set(v string) error {
	m := SubjectScopes{}
	for _, entry := range strings.Split(v, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		sub, scopes, ok := strings.Cut(entry, "=")
		sub = strings.TrimSpace(sub)
		if !ok || sub == "" {
			return errors.New("sub=scope [scope ...], comma-separated")
		}
		if _, dup := m[sub]; dup {
			return fmt.Errorf("each subject once (%q is listed twice)", sub)
		}
		list := []string{}
		for _, scope := range principal.ConfigFields(scopes) {
			if !slices.Contains(principal.Scopes, scope) {
				return fmt.Errorf("scopes among %s (%q, for %q, is not one)", strings.Join(principal.Scopes, ", "), scope, sub)
			}
			if !slices.Contains(list, scope) {
				list = append(list, scope)
			}
		}
		m[sub] = list
	}
	*s = m
	return nil
}
