package jwtauth

import (
	"flag"
	"reflect"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	on := func(c Config) Config {
		c.Refresh = defaultRefresh
		if c.ScopeClaim == "" {
			c.ScopeClaim = "scope"
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"off", Config{ScopeClaim: "scope", Refresh: defaultRefresh}, ""},
		{"issuer", on(Config{Issuer: "https://issuer.example", Audience: "plantstore"}), ""},
		{"JWKS URL on loopback over http", on(Config{JWKSURL: "http://127.0.0.1:8099/jwks", Audience: "plantstore"}), ""},
		{"both", on(Config{Issuer: "https://kubernetes.default.svc.cluster.local", JWKSURL: "https://kubernetes.default.svc/openid/v1/jwks", Audience: "plantstore"}), ""},
		{"no audience", on(Config{Issuer: "https://issuer.example"}), "--jwt-audience: required when JWTs are on (--jwt-issuer or --jwt-jwks-url)"},
		{"http off loopback", on(Config{Issuer: "http://issuer.example", Audience: "a"}), `--jwt-issuer "http://issuer.example": want https (http only on a loopback host)`},
		{"relative", on(Config{JWKSURL: "/jwks", Audience: "a"}), `--jwt-jwks-url "/jwks": want an absolute URL without query or fragment`},
		{"query", on(Config{Issuer: "https://issuer.example/?x=1", Audience: "a"}), `--jwt-issuer "https://issuer.example/?x=1": want an absolute URL without query or fragment`},
		{"empty scope claim", Config{Issuer: "https://i.example", Audience: "a", Refresh: defaultRefresh, ScopeClaim: " "}, "--jwt-scope-claim: must not be empty"},
		{"refresh too short", Config{Issuer: "https://i.example", Audience: "a", ScopeClaim: "scope", Refresh: time.Millisecond}, "--jwt-jwks-refresh 1ms: must be at least 1s"},
		{"audience without JWTs", Config{Audience: "a", ScopeClaim: "scope", Refresh: defaultRefresh}, "--jwt-audience: set --jwt-issuer or --jwt-jwks-url to turn JWTs on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("Validate = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSubjectScopesFlag(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--jwt-subject-scopes", "system:serviceaccount:shop:web=plants:read plants:write, system:serviceaccount:shop:dash=plants:read,nobody="}); err != nil {
		t.Fatal(err)
	}
	want := SubjectScopes{
		"system:serviceaccount:shop:web":  {"plants:read", "plants:write"},
		"system:serviceaccount:shop:dash": {"plants:read"},
		"nobody":                          {},
	}
	if !reflect.DeepEqual(c.SubjectScopes, want) {
		t.Fatalf("SubjectScopes = %v, want %v", c.SubjectScopes, want)
	}
	if got := c.SubjectScopes.String(); got != "nobody=,system:serviceaccount:shop:dash=plants:read,system:serviceaccount:shop:web=plants:read plants:write" {
		t.Fatalf("String = %q", got)
	}
	for _, bad := range []string{"noequals", "=plants:read", "a=plants:delete", "a=plants:read,a=plants:write", "a=plants:read\u00a0plants:write"} {
		var s SubjectScopes
		if err := s.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
