package main

// Black-box tests of JWT bearer tokens from an issuer on loopback, through
// the real app, side by side with the static tokens.

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/auth/jwtauth"
	"github.com/plantstore/plantstore/modules/auth/jwtauth/jwttest"
	"github.com/plantstore/plantstore/modules/auth/principal"
)

const jwtAudience = "plantstore"

// jwtServer is an app that accepts the JWTs of a loopback issuer (an RS256
// and an ES256 key published), and testToken; its logs are kept.
type jwtServer struct {
	*testServer
	iss      *jwttest.Issuer
	rsa, ec  *jwttest.Key
	keys     *jwtauth.KeySource
	logs     *observer.ObservedLogs
	mappedSA string
}

// sharedRSAKey is the RS256 key the tests sign with: generating a 2048-bit
// RSA key costs a tenth of a second of CPU or more, and the tests, each with
// an issuer of its own, only sign with it.
var sharedRSAKey = sync.OnceValues(func() (*jwttest.Key, error) { return jwttest.NewKey("RS256", "rsa-1") })

func startJWTServer(t *testing.T) *jwtServer {
	t.Helper()
	iss, err := jwttest.NewIssuer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	js := &jwtServer{iss: iss, mappedSA: "system:serviceaccount:shop:dashboard"}
	if js.rsa, err = sharedRSAKey(); err != nil {
		t.Fatal(err)
	}
	if js.ec, err = jwttest.NewKey("ES256", "ec-1"); err != nil {
		t.Fatal(err)
	}
	iss.Publish(js.rsa, js.ec)
	cfg := testConfig(t)
	cfg.Auth.JWT = jwtauth.Config{
		Issuer: iss.URL, Audience: jwtAudience, ScopeClaim: "scope", Refresh: time.Hour,
		SubjectScopes: jwtauth.SubjectScopes{js.mappedSA: {principal.ScopePlantsRead}},
	}
	core, logs := observer.New(zap.InfoLevel)
	js.logs = logs
	js.testServer = startServer(t, cfg,
		fx.Decorate(func(*zap.Logger) *zap.Logger { return zap.New(core) }),
		fx.Populate(&js.keys))
	return js
}

// token is a JWT for sub with scope (no scope claim when ""), signed by key,
// valid for a minute; edit changes its claims before signing.
func (js *jwtServer) token(key *jwttest.Key, sub, scope string, edit ...func(map[string]any)) string {
	claims := js.iss.Claims(jwtAudience, sub, time.Minute)
	if scope != "" {
		claims["scope"] = scope
	}
	for _, e := range edit {
		e(claims)
	}
	return key.Sign(claims)
}

// TestJWTScopes: every operation with JWTs of each scope, the scopes from
// the claim or from the subject mapping (a Kubernetes ServiceAccount).
func TestJWTScopes(t *testing.T) {
	t.Parallel()
	js := startJWTServer(t)
	read, write := principal.ScopePlantsRead, principal.ScopePlantsWrite
	for _, tc := range []struct {
		name, token string
		has         map[string]bool
	}{
		{"both scopes, RS256", js.token(js.rsa, "ci", "plants:read plants:write"), map[string]bool{read: true, write: true}},
		{"plants:read, ES256", js.token(js.ec, "dashboard", "openid plants:read"), map[string]bool{read: true}},
		{"plants:write as an scp list", js.token(js.ec, "loader", "", func(c map[string]any) { c["scp"] = []string{"plants:write"} }), map[string]bool{write: true}},
		{"ServiceAccount mapped to plants:read", js.token(js.rsa, js.mappedSA, ""), map[string]bool{read: true}},
		{"no scope at all", js.token(js.rsa, "nobody", ""), map[string]bool{}},
		// Scope tokens are separated by U+0020 only: joined by another
		// space character, two scopes are one unknown scope.
		{"no-break space joins one unknown scope", js.token(js.ec, "nbsp", "plants:read\u00a0plants:write"), map[string]bool{}},
		{"tab joins one unknown scope", js.token(js.ec, "tab", "plants:read\tplants:write"), map[string]bool{}},
		{"a space beside a no-break space", js.token(js.ec, "mixed", "plants:write\u00a0plants:read  plants:read"), map[string]bool{read: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { assertScopes(t, js.testServer, tc.token, tc.has) })
	}
	// Static tokens keep working beside JWTs.
	if r := js.do(t, js.request(t, http.MethodGet, "/plants", testToken, "", nil)); r.Status != http.StatusOK {
		t.Fatalf("static token beside JWTs: %d", r.Status)
	}
}

// TestJWTRefused: each kind of bad JWT is a 401 with invalid_token, counted
// by its reason.
func TestJWTRefused(t *testing.T) {
	t.Parallel()
	js := startJWTServer(t)
	stranger, err := jwttest.NewKey("ES256", "ec-1") // a known kid, another key
	if err != nil {
		t.Fatal(err)
	}
	set := func(k string, v any) func(map[string]any) { return func(c map[string]any) { c[k] = v } }
	now := time.Now()
	valid := js.iss.Claims(jwtAudience, "ci", time.Minute)
	for _, tc := range []struct {
		name, token, reason, message string
	}{
		{"expired", js.token(js.ec, "ci", "plants:read", set("exp", now.Add(-time.Hour).Unix())), jwtauth.ReasonExpired, "the bearer token has expired"},
		{"not yet valid", js.token(js.ec, "ci", "plants:read", set("nbf", now.Add(time.Hour).Unix())), jwtauth.ReasonNotYetValid, ""},
		{"wrong audience", js.token(js.ec, "ci", "plants:read", set("aud", "billing")), jwtauth.ReasonBadAudience, ""},
		{"wrong issuer", js.token(js.ec, "ci", "plants:read", set("iss", "https://issuer.example")), jwtauth.ReasonBadIssuer, ""},
		{"no exp", js.token(js.ec, "ci", "plants:read", func(c map[string]any) { delete(c, "exp") }), jwtauth.ReasonMissingClaim, ""},
		{"bad signature", stranger.Sign(valid), jwtauth.ReasonBadSignature, ""},
		{"alg none", jwttest.Unsigned("ec-1", valid), jwtauth.ReasonBadAlgorithm, ""},
		{"HMAC with the public key", jwttest.HMAC("rsa-1", js.rsa.PublicKeyBytes(), valid), jwtauth.ReasonBadAlgorithm, ""},
		{"unknown kid", js.ec.SignWithHeader(map[string]any{"alg": "ES256", "kid": "ec-404"}, valid), jwtauth.ReasonUnknownKey, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metric := `plantstore_auth_failures_total{reason="` + tc.reason + `"}`
			before := js.metric(t, metric)
			r := js.do(t, js.request(t, http.MethodGet, "/plants", tc.token, "", nil))
			message := tc.message
			if message == "" {
				message = "the bearer token is not valid"
			}
			assertErrorMessage(t, r, http.StatusUnauthorized, message)
			if got := r.Header.Get("WWW-Authenticate"); got != invalidChallenge {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, invalidChallenge)
			}
			if got := js.metric(t, metric); got != before+1 {
				t.Fatalf("%s = %v, want %v", metric, got, before+1)
			}
		})
	}
}

// TestJWTRotationAndIssuerDown: a key published mid-run is picked up by the
// first token that names it; with the issuer down, the keys in hand keep
// working, /readyz stays 200 and plantstore_auth_jwks_up turns 0.
func TestJWTRotationAndIssuerDown(t *testing.T) {
	t.Parallel()
	js := startJWTServer(t)
	next, err := jwttest.NewKey("EdDSA", "ed-2")
	if err != nil {
		t.Fatal(err)
	}
	js.iss.Publish(js.ec, next) // the rotation: rsa-1 retired, ed-2 new
	if r := js.do(t, js.request(t, http.MethodGet, "/plants", js.token(next, "ci", "plants:read"), "", nil)); r.Status != http.StatusOK {
		t.Fatalf("token of the new key: %d %s", r.Status, r.Body)
	}
	if got := js.metric(t, "plantstore_auth_jwks_keys"); got != 2 {
		t.Fatalf("plantstore_auth_jwks_keys = %v, want 2", got)
	}

	js.iss.SetDown(true)
	if err := js.keys.Refresh(context.Background()); err == nil { // what the background refresh does
		t.Fatal("a refresh with the issuer down succeeded")
	}
	if got := js.metric(t, "plantstore_auth_jwks_up"); got != 0 {
		t.Fatalf("plantstore_auth_jwks_up = %v with the issuer down", got)
	}
	if r := js.do(t, js.request(t, http.MethodPost, "/plants", js.token(js.ec, "ci", "plants:write"), "application/json", []byte(`{"id":5,"name":"Fern"}`))); r.Status != http.StatusOK {
		t.Fatalf("token of a kept key with the issuer down: %d %s", r.Status, r.Body)
	}
	resp, err := js.Client.Get(js.Admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz = %d with the issuer down, want 200", resp.StatusCode)
	}
}

// TestJWTCallerInAccessLog: the access log names a JWT's caller by its sub,
// and never shows the token.
func TestJWTCallerInAccessLog(t *testing.T) {
	t.Parallel()
	js := startJWTServer(t)
	token := js.token(js.ec, js.mappedSA, "")
	if r := js.do(t, js.request(t, http.MethodGet, "/plants", token, "", nil)); r.Status != http.StatusOK {
		t.Fatalf("GET = %d", r.Status)
	}
	expired := js.token(js.ec, "ci", "", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })
	if r := js.do(t, js.request(t, http.MethodGet, "/plants", expired, "", nil)); r.Status != http.StatusUnauthorized {
		t.Fatalf("expired = %d", r.Status)
	}
	var callers []string
	eventually(t, 10*time.Second, "both access lines", func() bool { return js.logs.FilterLoggerName("access").Len() >= 2 })
	for _, e := range js.logs.FilterLoggerName("access").All() {
		if c, ok := e.ContextMap()["caller"].(string); ok {
			callers = append(callers, c)
		}
	}
	if len(callers) != 1 || callers[0] != js.mappedSA {
		t.Fatalf("access log callers %q, want only %q (the refused request has none)", callers, js.mappedSA)
	}
	for _, e := range js.logs.All() {
		line := e.Message + " " + strings.Join(fieldStrings(e.ContextMap()), " ")
		for _, tok := range []string{token, expired, strings.Split(token, ".")[2], strings.Split(expired, ".")[2]} {
			if strings.Contains(line, tok) {
				t.Fatalf("a log line shows a token: %s", line)
			}
		}
	}
}

func fieldStrings(m map[string]any) []string {
	var out []string
	for k, v := range m {
		if s, ok := v.(string); ok {
			out = append(out, k+"="+s)
		}
	}
	return out
}

// TestJWTWithoutStaticTokens: with JWTs on, no static token is needed; the
// program starts and answers JWTs only.
func TestJWTWithoutStaticTokens(t *testing.T) {
	clearEnv(t)
	iss, err := jwttest.NewIssuer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	key, err := jwttest.NewKey("EdDSA", "ed-1")
	if err != nil {
		t.Fatal(err)
	}
	iss.Publish(key)
	cfg, err := parseConfig([]string{"--jwt-jwks-url=" + iss.JWKSURL, "--jwt-audience=" + jwtAudience,
		"--http-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0", "--store=memory", "--log-level=error",
		"--drain-delay=0s"}, io.Discard) // the stop is not what is tested
	if err != nil {
		t.Fatalf("JWTs alone: %v", err)
	}
	s := startServer(t, cfg)
	claims := iss.Claims(jwtAudience, "ci", time.Minute)
	claims["scope"] = "plants:read"
	if r := s.do(t, s.request(t, http.MethodGet, "/plants", key.Sign(claims), "", nil)); r.Status != http.StatusOK {
		t.Fatalf("JWT = %d %s", r.Status, r.Body)
	}
	if r := s.do(t, s.request(t, http.MethodGet, "/plants", testToken, "", nil)); r.Status != http.StatusUnauthorized {
		t.Fatalf("static token with none configured = %d", r.Status)
	}
}

// TestJWTCallerInSpan: the server span names the caller (enduser.id) by the
// JWT's sub, and no attribute holds the token.
func TestJWTCallerInSpan(t *testing.T) {
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: export while the app runs
	js := startJWTServer(t)
	token := js.token(js.ec, "ci-pipeline", "plants:write")
	tc := newTraceContext(t)
	req := tracedCreate(t, js.API, tc, `{"id":9,"name":"Ivy"}`)
	req.Header.Set("Authorization", "Bearer "+token)
	if r := js.do(t, req); r.Status != http.StatusOK {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var got requestSpans
	eventually(t, 20*time.Second, "the server span", func() bool {
		var ok bool
		got, ok = rcv.find(tc, "POST /plants")
		return ok
	})
	wantAttributes(t, got.server, map[string]string{"enduser.id": "ci-pipeline"})
	for k, v := range attrMap(got.server.GetAttributes()) {
		if strings.Contains(v, strings.Split(token, ".")[2]) {
			t.Fatalf("span attribute %s holds the token", k)
		}
	}
}

// TestJWTsNeverInOutput: the real binary at debug level, with JWTs good and
// bad, a key fetch that fails, and a fetch token sent to the issuer: no JWT,
// no signature and no fetch token in its output.
func TestJWTsNeverInOutput(t *testing.T) {
	iss, err := jwttest.NewIssuer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	key, err := sharedRSAKey()
	if err != nil {
		t.Fatal(err)
	}
	iss.Publish(key)
	const fetchToken = "fetch-token-9e1d4c"
	fetchTokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(fetchTokenFile, []byte(fetchToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "PLANTSTORE_LOG_LEVEL=debug", "PLANTSTORE_JWT_ISSUER="+iss.URL,
		"PLANTSTORE_JWT_AUDIENCE="+jwtAudience, "PLANTSTORE_JWT_FETCH_TOKEN_FILE="+fetchTokenFile)
	if got := iss.LastAuthorization(); got != "Bearer "+fetchToken {
		t.Fatalf("the issuer got Authorization %q, want the fetch token", got)
	}
	claims := func(edit func(map[string]any)) map[string]any {
		c := iss.Claims(jwtAudience, "ci", time.Minute)
		c["scope"] = "plants:write"
		edit(c)
		return c
	}
	good := key.Sign(claims(func(map[string]any) {}))
	tokens := []struct {
		token  string
		status int
	}{
		{good, 200},
		{key.Sign(claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), 401},
		{key.Sign(claims(func(c map[string]any) { c["aud"] = "billing" })), 401},
		{jwttest.Unsigned("rsa-1", claims(func(map[string]any) {})), 401},
		{key.SignWithHeader(map[string]any{"alg": "RS256", "kid": "rsa-404"}, claims(func(map[string]any) {})), 401}, // fetches, and fails:
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for i, tc := range tokens {
		if i == len(tokens)-1 {
			iss.SetDown(true)
		}
		req, err := http.NewRequest(http.MethodPost, p.API+"/plants", strings.NewReader(`{"id":`+strconv.Itoa(i)+`,"name":"a"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, tc.status)
		}
	}
	if code := p.Signal(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Output())
	}
	out := p.Output()
	if !strings.Contains(out, `"level":"debug"`) || !strings.Contains(out, "JWT keys not fetched") || !strings.Contains(out, `"caller":"ci"`) {
		t.Fatalf("expected debug lines, the failed fetch and the caller ci in the output:\n%s", out)
	}
	for _, tc := range tokens {
		for _, part := range append(strings.Split(tc.token, "."), tc.token) {
			if len(part) > 16 && strings.Contains(out, part) {
				t.Fatalf("the output contains (part of) a JWT %q:\n%s", part, out)
			}
		}
	}
	if strings.Contains(out, fetchToken) {
		t.Fatalf("the output contains the fetch token:\n%s", out)
	}
}
