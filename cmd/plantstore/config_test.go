package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants"
)

// clearEnv unsets every PLANTSTORE_* variable for the test's duration, so
// that the developer's environment cannot change what parseConfig sees.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix+"_") {
			t.Setenv(name, "") // restores the value when the test ends
			if err := os.Unsetenv(name); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestParseConfigDefaults(t *testing.T) {
	clearEnv(t)
	cfg, err := parseConfig([]string{"--tokens", "a"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"http-addr", cfg.HTTP.Addr, ":8080"},
		{"admin-addr", cfg.HTTP.AdminAddr, ":9090"},
		{"drain-delay", cfg.HTTP.DrainDelay.String(), "5s"},
		{"shutdown-timeout", cfg.HTTP.ShutdownTimeout.String(), "20s"},
		{"store", cfg.Plants.Store, "bolt"},
		{"data-dir", cfg.Plants.Bolt.DataDir, "./data"},
		{"postgres-url", cfg.Plants.Postgres.URL, ""},
		{"postgres-max-conns", strconv.Itoa(cfg.Plants.Postgres.MaxConns), "16"},
		{"postgres-connect-timeout", cfg.Plants.Postgres.ConnectTimeout.String(), "5s"},
		{"postgres-statement-timeout", cfg.Plants.Postgres.StatementTimeout.String(), "5s"},
		{"postgres-commit-timeout", cfg.Plants.Postgres.CommitTimeout.String(), "1m0s"},
		{"max-body-bytes", strconv.FormatInt(cfg.Plants.MaxBodyBytes, 10), "1048576"},
		{"max-import-bytes", strconv.FormatInt(cfg.Plants.MaxImportBytes, 10), "1073741824"},
		{"tokens-file", cfg.Auth.TokensFile, ""},
		{"log-level", cfg.Telemetry.LogLevel, "info"},
		{"log-format", cfg.Telemetry.LogFormat, "json"},
		{"jwt-issuer", cfg.Auth.JWT.Issuer, ""},
		{"jwt-jwks-url", cfg.Auth.JWT.JWKSURL, ""},
		{"jwt-audience", cfg.Auth.JWT.Audience, ""},
		{"jwt-scope-claim", cfg.Auth.JWT.ScopeClaim, "scope"},
		{"jwt-subject-scopes", cfg.Auth.JWT.SubjectScopes.String(), ""},
		{"jwt-jwks-refresh", cfg.Auth.JWT.Refresh.String(), "5m0s"},
	} {
		if c.got != c.want {
			t.Errorf("default --%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !slices.Equal(cfg.Auth.Tokens, []string{"a"}) {
		t.Errorf("tokens = %q", cfg.Auth.Tokens)
	}
}

// configFields are the flags with their environment twins, and how to read
// each back from a config.
var configFields = []struct {
	flag, env         string
	fromEnv, fromFlag string
	get               func(config) string
}{
	{"http-addr", "PLANTSTORE_HTTP_ADDR", "127.0.0.1:1111", "127.0.0.1:2222", func(c config) string { return c.HTTP.Addr }},
	{"admin-addr", "PLANTSTORE_ADMIN_ADDR", "127.0.0.1:3333", "127.0.0.1:4444", func(c config) string { return c.HTTP.AdminAddr }},
	{"drain-delay", "PLANTSTORE_DRAIN_DELAY", "7s", "3s", func(c config) string { return c.HTTP.DrainDelay.String() }},
	{"shutdown-timeout", "PLANTSTORE_SHUTDOWN_TIMEOUT", "1m0s", "9s", func(c config) string { return c.HTTP.ShutdownTimeout.String() }},
	{"store", "PLANTSTORE_STORE", plants.StoreBolt, plants.StoreMemory, func(c config) string { return c.Plants.Store }},
	{"data-dir", "PLANTSTORE_DATA_DIR", "/var/lib/env", "/var/lib/flag", func(c config) string { return c.Plants.Bolt.DataDir }},
	{"postgres-url", "PLANTSTORE_POSTGRES_URL", "postgres://env/db", "postgres://flag/db", func(c config) string { return c.Plants.Postgres.URL }},
	{"postgres-max-conns", "PLANTSTORE_POSTGRES_MAX_CONNS", "40", "8", func(c config) string { return strconv.Itoa(c.Plants.Postgres.MaxConns) }},
	{"postgres-connect-timeout", "PLANTSTORE_POSTGRES_CONNECT_TIMEOUT", "2s", "10s", func(c config) string { return c.Plants.Postgres.ConnectTimeout.String() }},
	{"postgres-statement-timeout", "PLANTSTORE_POSTGRES_STATEMENT_TIMEOUT", "1.5s", "30s", func(c config) string { return c.Plants.Postgres.StatementTimeout.String() }},
	{"postgres-commit-timeout", "PLANTSTORE_POSTGRES_COMMIT_TIMEOUT", "2m0s", "30s", func(c config) string { return c.Plants.Postgres.CommitTimeout.String() }},
	{"max-body-bytes", "PLANTSTORE_MAX_BODY_BYTES", "2048", "4096", func(c config) string { return strconv.FormatInt(c.Plants.MaxBodyBytes, 10) }},
	{"max-import-bytes", "PLANTSTORE_MAX_IMPORT_BYTES", "4096", "8192", func(c config) string { return strconv.FormatInt(c.Plants.MaxImportBytes, 10) }},
	{"changes-retention", "PLANTSTORE_CHANGES_RETENTION", "24h0m0s", "10m0s", func(c config) string { return c.Plants.ChangesRetention.String() }},
	{"tokens-file", "PLANTSTORE_TOKENS_FILE", "/run/env-tokens", "/run/flag-tokens", func(c config) string { return c.Auth.TokensFile }},
	{"tokens", "PLANTSTORE_TOKENS", "env-a,env-b", "flag-a, flag-b", func(c config) string { return strings.Join(c.Auth.Tokens, ",") }},
	{"log-level", "PLANTSTORE_LOG_LEVEL", "debug", "warn", func(c config) string { return c.Telemetry.LogLevel }},
	{"log-format", "PLANTSTORE_LOG_FORMAT", "console", "json", func(c config) string { return c.Telemetry.LogFormat }},
	{"read-header-timeout", "PLANTSTORE_READ_HEADER_TIMEOUT", "2s", "3s", func(c config) string { return c.HTTP.Limits.ReadHeaderTimeout.String() }},
	{"read-timeout", "PLANTSTORE_READ_TIMEOUT", "11s", "12s", func(c config) string { return c.HTTP.Limits.ReadTimeout.String() }},
	{"write-timeout", "PLANTSTORE_WRITE_TIMEOUT", "13s", "14s", func(c config) string { return c.HTTP.Limits.WriteTimeout.String() }},
	{"idle-timeout", "PLANTSTORE_IDLE_TIMEOUT", "1m0s", "2m0s", func(c config) string { return c.HTTP.Limits.IdleTimeout.String() }},
	{"max-header-bytes", "PLANTSTORE_MAX_HEADER_BYTES", "8192", "16384", func(c config) string { return strconv.Itoa(c.HTTP.Limits.MaxHeaderBytes) }},
	{"max-concurrent-requests", "PLANTSTORE_MAX_CONCURRENT_REQUESTS", "64", "32", func(c config) string { return strconv.Itoa(c.HTTP.Limits.MaxConcurrentRequests) }},
	{"max-connections", "PLANTSTORE_MAX_CONNECTIONS", "500", "300", func(c config) string { return strconv.Itoa(c.HTTP.Limits.MaxConnections) }},
	{"max-followers", "PLANTSTORE_MAX_FOLLOWERS", "100", "50", func(c config) string { return strconv.Itoa(c.HTTP.Limits.MaxFollowers) }},
	{"max-followers-per-token", "PLANTSTORE_MAX_FOLLOWERS_PER_TOKEN", "8", "4", func(c config) string { return strconv.Itoa(c.HTTP.Limits.MaxFollowersPerCaller) }},
	{"max-imports", "PLANTSTORE_MAX_IMPORTS", "10", "5", func(c config) string { return strconv.Itoa(c.HTTP.Limits.MaxImports) }},
	{"max-imports-per-token", "PLANTSTORE_MAX_IMPORTS_PER_TOKEN", "3", "1", func(c config) string { return strconv.Itoa(c.HTTP.Limits.MaxImportsPerCaller) }},
	{"rate-limit", "PLANTSTORE_RATE_LIMIT", "2.5", "0.001", func(c config) string { return strconv.FormatFloat(c.Auth.RateLimit, 'g', -1, 64) }},
	{"rate-burst", "PLANTSTORE_RATE_BURST", "5", "7", func(c config) string { return strconv.Itoa(c.Auth.RateBurst) }},
	{"pprof", "PLANTSTORE_PPROF", "true", "false", func(c config) string { return strconv.FormatBool(c.HTTP.Pprof) }},
	{"start-timeout", "PLANTSTORE_START_TIMEOUT", "2m0s", "30s", func(c config) string { return c.StartTimeout.String() }},
	{"jwt-issuer", "PLANTSTORE_JWT_ISSUER", "https://env.example", "https://flag.example", func(c config) string { return c.Auth.JWT.Issuer }},
	{"jwt-jwks-url", "PLANTSTORE_JWT_JWKS_URL", "https://env.example/jwks", "http://127.0.0.1:8099/jwks", func(c config) string { return c.Auth.JWT.JWKSURL }},
	{"jwt-audience", "PLANTSTORE_JWT_AUDIENCE", "env-aud", "flag-aud", func(c config) string { return c.Auth.JWT.Audience }},
	{"jwt-scope-claim", "PLANTSTORE_JWT_SCOPE_CLAIM", "scp", "roles", func(c config) string { return c.Auth.JWT.ScopeClaim }},
	{"jwt-subject-scopes", "PLANTSTORE_JWT_SUBJECT_SCOPES", "system:serviceaccount:a:b=plants:read", "c=plants:read plants:write", func(c config) string { return c.Auth.JWT.SubjectScopes.String() }},
	{"jwt-ca-file", "PLANTSTORE_JWT_CA_FILE", "/run/env-ca.crt", "/run/flag-ca.crt", func(c config) string { return c.Auth.JWT.CAFile }},
	{"jwt-fetch-token-file", "PLANTSTORE_JWT_FETCH_TOKEN_FILE", "/run/env-token", "/run/flag-token", func(c config) string { return c.Auth.JWT.FetchToken }},
	{"jwt-jwks-refresh", "PLANTSTORE_JWT_JWKS_REFRESH", "10m0s", "1m0s", func(c config) string { return c.Auth.JWT.Refresh.String() }},
	{"webhooks-file", "PLANTSTORE_WEBHOOKS_FILE", "/run/env-hooks.yaml", "/run/flag-hooks.yaml", func(c config) string { return c.Webhooks.File }},
	{"webhooks-allow-private", "PLANTSTORE_WEBHOOKS_ALLOW_PRIVATE", "true", "false", func(c config) string { return strconv.FormatBool(c.Webhooks.AllowPrivate) }},
	{"webhooks-allow-http", "PLANTSTORE_WEBHOOKS_ALLOW_HTTP", "true", "false", func(c config) string { return strconv.FormatBool(c.Webhooks.AllowHTTP) }},
	{"webhooks-timeout", "PLANTSTORE_WEBHOOKS_TIMEOUT", "3s", "4s", func(c config) string { return c.Webhooks.Timeout.String() }},
	{"webhooks-retry-schedule", "PLANTSTORE_WEBHOOKS_RETRY_SCHEDULE", "1s,1m0s", "2s,2m0s,2h0m0s", func(c config) string { return c.Webhooks.Retries.String() }},
	{"webhooks-concurrency", "PLANTSTORE_WEBHOOKS_CONCURRENCY", "8", "2", func(c config) string { return strconv.Itoa(c.Webhooks.Concurrency) }},
	{"webhooks-poll-interval", "PLANTSTORE_WEBHOOKS_POLL_INTERVAL", "250ms", "2s", func(c config) string { return c.Webhooks.PollInterval.String() }},
	{"webhooks-api", "PLANTSTORE_WEBHOOKS_API", "true", "false", func(c config) string { return strconv.FormatBool(c.Webhooks.API) }},
	{"webhooks-disable-after", "PLANTSTORE_WEBHOOKS_DISABLE_AFTER", "24h0m0s", "1h0m0s", func(c config) string { return c.Webhooks.DisableAfter.String() }},
}

// flagExamples are values for flags that refuse the placeholder "x" as they
// parse it (TestEnvVarIsTheOneFFReads).
var flagExamples = map[string]string{"jwt-subject-scopes": "x=plants:read"}

// configFieldNeeds are the other settings a row's flag needs to be valid:
// the JWT flags are refused unless JWTs are on, which needs an audience.
var configFieldNeeds = map[string]map[string]string{
	"jwt-issuer":           {"PLANTSTORE_JWT_AUDIENCE": "plantstore"},
	"jwt-jwks-url":         {"PLANTSTORE_JWT_AUDIENCE": "plantstore"},
	"jwt-audience":         {"PLANTSTORE_JWT_ISSUER": "https://issuer.example"},
	"jwt-subject-scopes":   {"PLANTSTORE_JWT_ISSUER": "https://issuer.example", "PLANTSTORE_JWT_AUDIENCE": "plantstore"},
	"jwt-ca-file":          {"PLANTSTORE_JWT_ISSUER": "https://issuer.example", "PLANTSTORE_JWT_AUDIENCE": "plantstore"},
	"jwt-fetch-token-file": {"PLANTSTORE_JWT_ISSUER": "https://issuer.example", "PLANTSTORE_JWT_AUDIENCE": "plantstore"},
}

// TestConfigFieldsCoverEveryFlag keeps configFields complete: a new flag
// needs its row, so that its environment twin is tested too.
func TestConfigFieldsCoverEveryFlag(t *testing.T) {
	var cfg config
	var flags []string
	newFlagSet(&cfg).VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	var tested []string
	for _, f := range configFields {
		tested = append(tested, f.flag)
		if f.env != envVar(f.flag) {
			t.Errorf("--%s: row says %s, the program reads %s", f.flag, f.env, envVar(f.flag))
		}
	}
	slices.Sort(flags)
	slices.Sort(tested)
	if !slices.Equal(flags, tested) {
		t.Fatalf("flags %q, but configFields (config_test.go) tests %q: add a row for each new flag", flags, tested)
	}
}

func TestParseConfigEnvTwins(t *testing.T) {
	for _, f := range configFields {
		t.Run(f.flag, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("PLANTSTORE_TOKENS", "t") // a valid config needs a token
			for k, v := range configFieldNeeds[f.flag] {
				t.Setenv(k, v)
			}
			t.Setenv(f.env, f.fromEnv)

			cfg, err := parseConfig(nil, io.Discard)
			if err != nil {
				t.Fatalf("%s=%s: %v", f.env, f.fromEnv, err)
			}
			want := f.fromEnv
			if f.flag == "tokens" {
				want = "env-a,env-b"
			}
			if got := f.get(cfg); got != want {
				t.Fatalf("%s=%s gives %q", f.env, f.fromEnv, got)
			}

			// The flag wins over its twin.
			cfg, err = parseConfig([]string{"--" + f.flag + "=" + f.fromFlag}, io.Discard)
			if err != nil {
				t.Fatalf("--%s=%s: %v", f.flag, f.fromFlag, err)
			}
			want = f.fromFlag
			if f.flag == "tokens" {
				want = "flag-a,flag-b"
			}
			if got := f.get(cfg); got != want {
				t.Fatalf("--%s=%s with %s=%s gives %q, want the flag's value", f.flag, f.fromFlag, f.env, f.fromEnv, got)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		err  string
	}{
		{"unknown flag", []string{"--colour=green"}, nil, "unknown flag --colour"},
		{"missing value", []string{"--store"}, nil, "--store needs a value"},
		{"unexpected argument", []string{"serve"}, nil, `unexpected argument "serve"`},
		{"duration", []string{"--drain-delay=soon"}, nil,
			`--drain-delay "soon": want a duration such as 5s, 250ms or 1m30s`},
		{"duration from env", nil, map[string]string{"PLANTSTORE_SHUTDOWN_TIMEOUT": "forever"},
			`PLANTSTORE_SHUTDOWN_TIMEOUT "forever": want a duration such as 5s, 250ms or 1m30s`},
		{"number", []string{"--max-body-bytes=1MiB"}, nil, `--max-body-bytes "1MiB": want a whole number such as 16`},
		{"number from env", nil, map[string]string{"PLANTSTORE_MAX_BODY_BYTES": "lots"},
			`PLANTSTORE_MAX_BODY_BYTES "lots": want a whole number such as 16`},
		{"fraction", []string{"--rate-limit=fast"}, nil, `--rate-limit "fast": want a number such as 2.5`},
		{"bool", []string{"--pprof=yes"}, nil, `--pprof "yes": want true or false`},
		{"http-addr", []string{"--http-addr=8080"}, nil, `--http-addr "8080": want host:port, e.g. :8080`},
		{"http-addr without port", []string{"--http-addr=localhost:"}, nil, `--http-addr "localhost:": want host:port, e.g. :8080`},
		{"admin-addr from env", nil, map[string]string{"PLANTSTORE_ADMIN_ADDR": "localhost"}, `PLANTSTORE_ADMIN_ADDR "localhost": want host:port, e.g. :8080`},
		{"same addresses", []string{"--http-addr=:8000", "--admin-addr=:8000"}, nil, "--http-addr and --admin-addr must differ"},
		{"negative drain delay", []string{"--drain-delay=-1s"}, nil, "--drain-delay -1s: must not be negative"},
		{"zero shutdown timeout", []string{"--shutdown-timeout=0s"}, nil, "--shutdown-timeout 0s: must be positive"},
		{"zero body limit", []string{"--max-body-bytes=0"}, nil, "--max-body-bytes 0: must be positive"},
		{"negative body limit", nil, map[string]string{"PLANTSTORE_MAX_BODY_BYTES": "-5"}, "PLANTSTORE_MAX_BODY_BYTES -5: must be positive"},
		{"store", []string{"--store=sqlite"}, nil, `--store "sqlite": want memory, bolt or postgres`},
		{"store from env", nil, map[string]string{"PLANTSTORE_STORE": "Memory"}, `PLANTSTORE_STORE "Memory": want memory, bolt or postgres`},
		{"store on the command line over env", []string{"--store=sqlite"}, map[string]string{"PLANTSTORE_STORE": "memory"}, `--store "sqlite": want memory, bolt or postgres`},
		{"postgres pool", []string{"--postgres-max-conns=0"}, nil, "--postgres-max-conns 0: want a positive number"},
		{"postgres pool from env", nil, map[string]string{"PLANTSTORE_POSTGRES_MAX_CONNS": "-3"}, "PLANTSTORE_POSTGRES_MAX_CONNS -3: want a positive number"},
		{"postgres connect timeout", []string{"--postgres-connect-timeout=0s"}, nil, "--postgres-connect-timeout 0s: must be positive"},
		{"postgres statement timeout", nil, map[string]string{"PLANTSTORE_POSTGRES_STATEMENT_TIMEOUT": "-1s"}, "PLANTSTORE_POSTGRES_STATEMENT_TIMEOUT -1s: must be positive"},
		{"postgres commit timeout", []string{"--postgres-commit-timeout=0s"}, nil, "--postgres-commit-timeout 0s: must be positive"},
		{"bolt without data dir", []string{"--store=bolt", "--data-dir="}, nil, "--data-dir must not be empty"},
		{"log level", []string{"--log-level=verbose"}, nil, `--log-level "verbose": want debug, info, warn or error`},
		{"log format from env", nil, map[string]string{"PLANTSTORE_LOG_FORMAT": "xml"}, `PLANTSTORE_LOG_FORMAT "xml": want json or console`},
		{"no token", []string{"--tokens="}, nil,
			"no API token configured: set --tokens-file or --tokens (PLANTSTORE_TOKENS_FILE, PLANTSTORE_TOKENS), or accept JWTs with --jwt-issuer or --jwt-jwks-url"},
		{"only blank tokens", nil, map[string]string{"PLANTSTORE_TOKENS": " , ,"},
			"no API token configured: set --tokens-file or --tokens (PLANTSTORE_TOKENS_FILE, PLANTSTORE_TOKENS), or accept JWTs with --jwt-issuer or --jwt-jwks-url"},
		{"JWT without audience", []string{"--jwt-issuer=https://issuer.example"}, nil,
			"--jwt-audience: required when JWTs are on (--jwt-issuer or --jwt-jwks-url)"},
		{"JWT issuer over http", nil, map[string]string{"PLANTSTORE_JWT_ISSUER": "http://issuer.example", "PLANTSTORE_JWT_AUDIENCE": "plantstore"},
			`PLANTSTORE_JWT_ISSUER "http://issuer.example": want https (http only on a loopback host)`},
		{"JWT audience alone from env", nil, map[string]string{"PLANTSTORE_JWT_AUDIENCE": "plantstore"},
			"PLANTSTORE_JWT_AUDIENCE: set --jwt-issuer or --jwt-jwks-url to turn JWTs on"},
		{"JWT audience alone", []string{"--jwt-audience=plantstore"}, nil,
			"--jwt-audience: set --jwt-issuer or --jwt-jwks-url to turn JWTs on"},
		{"JWT subject scopes", []string{"--jwt-subject-scopes=system:serviceaccount:a:b=plants:delete"}, nil,
			`--jwt-subject-scopes "system:serviceaccount:a:b=plants:delete": want scopes among plants:read, plants:write, webhooks:manage ("plants:delete", for "system:serviceaccount:a:b", is not one)`},
		{"JWT refresh", []string{"--jwt-jwks-url=https://issuer.example/jwks", "--jwt-audience=a", "--jwt-jwks-refresh=10ms"}, nil,
			"--jwt-jwks-refresh 10ms: must be at least 1s"},
		{"several at once", []string{"--store=sqlite", "--log-level=loud", "--drain-delay=-2s"}, nil,
			`--drain-delay -2s: must not be negative; --store "sqlite": want memory, bolt or postgres; --log-level "loud": want debug, info, warn or error`},
		{"several at once, from both", []string{"--store=sqlite"}, map[string]string{"PLANTSTORE_LOG_LEVEL": "loud", "PLANTSTORE_DRAIN_DELAY": "-2s"},
			`PLANTSTORE_DRAIN_DELAY -2s: must not be negative; --store "sqlite": want memory, bolt or postgres; PLANTSTORE_LOG_LEVEL "loud": want debug, info, warn or error`},
		{"same addresses from env", nil, map[string]string{"PLANTSTORE_HTTP_ADDR": ":8000", "PLANTSTORE_ADMIN_ADDR": ":8000"}, "--http-addr and --admin-addr must differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("PLANTSTORE_TOKENS", "t")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := parseConfig(tc.args, io.Discard)
			if err == nil {
				t.Fatalf("parseConfig(%q) with %v succeeded", tc.args, tc.env)
			}
			if err.Error() != tc.err {
				t.Fatalf("error\n got %q\nwant %q", err, tc.err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error spans several lines: %q", err)
			}
		})
	}
}

// TestRunRefusesBadConfig: run prints one line on stderr and exits 2
// before anything listens.
func TestRunRefusesBadConfig(t *testing.T) {
	missing := t.TempDir() + "/absent-tokens"
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		stderr string
	}{
		{"bad flag", []string{"--drain-delay=soon", "--tokens=t"}, nil,
			`plantstore: --drain-delay "soon": want a duration such as 5s, 250ms or 1m30s (see plantstore --help)`},
		{"bad env value", []string{"--tokens=t"}, map[string]string{"PLANTSTORE_LOG_LEVEL": "loud"},
			`plantstore: PLANTSTORE_LOG_LEVEL "loud": want debug, info, warn or error (see plantstore --help)`},
		{"bad env syntax", []string{"--tokens=t"}, map[string]string{"PLANTSTORE_DRAIN_DELAY": "5"},
			`plantstore: PLANTSTORE_DRAIN_DELAY "5": want a duration such as 5s, 250ms or 1m30s (see plantstore --help)`},
		{"unknown flag", []string{"--tokens=t", "--drain=5s"}, nil, `plantstore: unknown flag --drain (see plantstore --help)`},
		{"no token", nil, nil,
			"plantstore: no API token configured: set --tokens-file or --tokens (PLANTSTORE_TOKENS_FILE, PLANTSTORE_TOKENS), or accept JWTs with --jwt-issuer or --jwt-jwks-url (see plantstore --help)"},
		{"unreadable tokens file", []string{"--tokens-file=" + missing, "--http-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0", "--log-level=error", "--store=memory"}, nil,
			"plantstore: read tokens file: open " + missing + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 {
				t.Fatalf("run(%q) = %d, want 2; stderr %q", tc.args, code, stderr.String())
			}
			if stderr.String() != tc.stderr+"\n" {
				t.Fatalf("stderr\n got %q\nwant %q", stderr.String(), tc.stderr+"\n")
			}
			if stdout.Len() != 0 { // no usage after a mistake: it buried the one line
				t.Fatalf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	clearEnv(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run -h = %d; stderr %q", code, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Fatalf("run -h wrote to stderr: %q", stderr.String())
	}
	usage := stdout.String()
	if !strings.HasPrefix(usage, "usage: plantstore [flags]\n") {
		t.Fatalf("usage starts %q", usage[:min(len(usage), 60)])
	}
	for _, f := range configFields {
		if !strings.Contains(usage, "-"+f.flag+" ") && !strings.Contains(usage, "-"+f.flag+"\n") {
			t.Errorf("usage does not list --%s:\n%s", f.flag, usage)
		}
	}
	if !strings.Contains(usage, "PLANTSTORE_HTTP_ADDR") {
		t.Errorf("usage does not explain the environment twins:\n%s", usage)
	}
}
