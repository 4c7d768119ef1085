package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"

	"github.com/plantstore/plantstore/modules/auth"
	httpserver "github.com/plantstore/plantstore/modules/http"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/telemetry"
)

// config is every module's configuration, parsed from flags and their
// PLANTSTORE_* environment twins (a flag wins over its twin).
type config struct {
	HTTP      httpserver.Config
	Auth      auth.Config
	Plants    plants.Config
	Telemetry telemetry.Config
}

// envPrefix names the environment twins: --http-addr is PLANTSTORE_HTTP_ADDR.
const envPrefix = "PLANTSTORE"

// parseConfig parses and validates args (without the program name). Any
// error is meant to be printed as one line before exiting with code 2.
func parseConfig(args []string, usage io.Writer) (config, error) {
	var cfg config
	var tokens string
	fs := newFlagSet(&cfg, &tokens)
	fs.Usage = func() {} // the usage is for --help only: a mistake is one line
	explain := explainValues(fs)
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix(envPrefix)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help := newFlagSet(&config{}, new(string)) // fs's values are wrapped now
			help.SetOutput(usage)
			printUsage(help)
		}
		return cfg, explain(err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg.Auth.Tokens = auth.SplitList(tokens)
	return cfg, cfg.validate()
}

// newFlagSet defines every flag of the program, each filling its field of
// cfg (--tokens fills *tokens, split later). The manifest tests read the
// flags from here, so they know every setting the program takes.
func newFlagSet(cfg *config, tokens *string) *flag.FlagSet {
	fs := flag.NewFlagSet("plantstore", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller, on one line
	fs.StringVar(&cfg.HTTP.Addr, "http-addr", ":8080", "API listen address")
	fs.StringVar(&cfg.HTTP.AdminAddr, "admin-addr", ":9090", "admin listen address (probes, metrics; keep it cluster-internal)")
	fs.DurationVar(&cfg.HTTP.DrainDelay, "drain-delay", 5*time.Second, "how long the API keeps serving after SIGTERM while readiness is 503")
	fs.DurationVar(&cfg.HTTP.ShutdownTimeout, "shutdown-timeout", 20*time.Second, "how long in-flight requests get after the drain")
	limits := &cfg.HTTP.Limits
	d := httpserver.DefaultLimits
	fs.DurationVar(&limits.ReadHeaderTimeout, "read-header-timeout", d.ReadHeaderTimeout, "how long a client has to send a request's headers")
	fs.DurationVar(&limits.ReadTimeout, "read-timeout", d.ReadTimeout, "how long a client has to send a whole request, body included")
	fs.DurationVar(&limits.WriteTimeout, "write-timeout", d.WriteTimeout, "how long from a request's headers to the end of its answer")
	fs.DurationVar(&limits.IdleTimeout, "idle-timeout", d.IdleTimeout, "how long a keep-alive connection may wait for its next request")
	fs.IntVar(&limits.MaxHeaderBytes, "max-header-bytes", d.MaxHeaderBytes, "largest accepted request line and headers in bytes")
	fs.IntVar(&limits.MaxConcurrentRequests, "max-concurrent-requests", d.MaxConcurrentRequests, "authenticated API requests served at once; more are answered 503")
	fs.IntVar(&limits.MaxConnections, "max-connections", d.MaxConnections, "API connections open at once; more wait in the kernel's accept queue. 0 derives it from the file limit: limit - max(128, limit/10), at least 16")
	fs.Float64Var(&cfg.Auth.RateLimit, "rate-limit", 0, "API requests per second allowed per token, 0 for no limit; more are answered 429")
	fs.IntVar(&cfg.Auth.RateBurst, "rate-burst", 20, "API requests a token may send at once under --rate-limit")
	fs.StringVar(&cfg.Plants.Store, "store", plants.StoreBolt, "plant store: memory, bolt or postgres")
	fs.StringVar(&cfg.Plants.DataDir, "data-dir", "./data", "directory of the bolt store's plants.db")
	fs.StringVar(&cfg.Plants.PostgresURL, "postgres-url", "", "PostgreSQL connection URL or key=value string; what it leaves out comes from libpq's PG* variables (PGHOST, PGDATABASE, PGUSER, PGPASSWORD, ...)")
	fs.IntVar(&cfg.Plants.PostgresMaxConns, "postgres-max-conns", pgstore.DefaultMaxConns, "PostgreSQL connections per process (the pool size)")
	fs.DurationVar(&cfg.Plants.PostgresConnectTimeout, "postgres-connect-timeout", pgstore.DefaultConnectTimeout, "how long opening a PostgreSQL connection may take (wins over connect_timeout in the URL)")
	fs.DurationVar(&cfg.Plants.PostgresStatementTimeout, "postgres-statement-timeout", pgstore.DefaultStatementTimeout, "how long a statement may run on PostgreSQL (wins over statement_timeout in the URL)")
	fs.Int64Var(&cfg.Plants.MaxBodyBytes, "max-body-bytes", plants.DefaultMaxBodyBytes, "largest accepted request body in bytes")
	fs.StringVar(&cfg.Auth.TokensFile, "tokens-file", "", "file of API tokens, one per line, # comments; reloaded on change")
	fs.StringVar(tokens, "tokens", "", "comma-separated API tokens (for development; prefer --tokens-file)")
	fs.StringVar(&cfg.Telemetry.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&cfg.Telemetry.LogFormat, "log-format", "json", "log format: json or console")
	fs.BoolVar(&cfg.HTTP.Pprof, "pprof", false, "serve Go's profiles on the admin listener: /debug/pprof/profile (CPU), /debug/pprof/heap, goroutine, allocs, block, mutex, threadcreate (no index page)")
	return fs
}

// envVar is a flag's environment twin, as ff names it: --http-addr is
// PLANTSTORE_HTTP_ADDR.
func envVar(flagName string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (c config) validate() error {
	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	for _, addr := range []struct{ flag, value string }{{"http-addr", c.HTTP.Addr}, {"admin-addr", c.HTTP.AdminAddr}} {
		_, port, err := net.SplitHostPort(addr.value)
		check(err == nil && port != "", "--%s %q: want host:port, e.g. :8080", addr.flag, addr.value)
	}
	_, port, _ := net.SplitHostPort(c.HTTP.Addr)
	check(c.HTTP.Addr != c.HTTP.AdminAddr || port == "0", "--http-addr and --admin-addr must differ")
	check(c.HTTP.DrainDelay >= 0, "--drain-delay %v: must not be negative", c.HTTP.DrainDelay)
	check(c.HTTP.ShutdownTimeout > 0, "--shutdown-timeout %v: must be positive", c.HTTP.ShutdownTimeout)
	check(c.HTTP.Limits.ReadHeaderTimeout > 0, "--read-header-timeout %v: must be positive", c.HTTP.Limits.ReadHeaderTimeout)
	check(c.HTTP.Limits.ReadTimeout > 0, "--read-timeout %v: must be positive", c.HTTP.Limits.ReadTimeout)
	check(c.HTTP.Limits.WriteTimeout > 0, "--write-timeout %v: must be positive", c.HTTP.Limits.WriteTimeout)
	check(c.HTTP.Limits.IdleTimeout > 0, "--idle-timeout %v: must be positive", c.HTTP.Limits.IdleTimeout)
	check(c.HTTP.Limits.MaxHeaderBytes > 0, "--max-header-bytes %d: must be positive", c.HTTP.Limits.MaxHeaderBytes)
	check(c.HTTP.Limits.MaxConcurrentRequests > 0, "--max-concurrent-requests %d: must be positive", c.HTTP.Limits.MaxConcurrentRequests)
	check(c.HTTP.Limits.MaxConnections >= 0, "--max-connections %d: must not be negative (0 derives it from the file limit)", c.HTTP.Limits.MaxConnections)
	check(c.Auth.RateLimit >= 0, "--rate-limit %v: must not be negative (0 turns it off)", c.Auth.RateLimit)
	check(c.Auth.RateLimit == 0 || c.Auth.RateBurst > 0, "--rate-burst %d: must be positive", c.Auth.RateBurst)
	check(c.Plants.MaxBodyBytes > 0, "--max-body-bytes %d: must be positive", c.Plants.MaxBodyBytes)
	switch c.Plants.Store {
	case plants.StoreMemory, plants.StoreBolt, plants.StorePostgres:
		// postgres needs no URL: libpq's PG* variables may say it all.
	default:
		check(false, "--store %q: want memory, bolt or postgres", c.Plants.Store)
	}
	check(c.Plants.Store != plants.StoreBolt || c.Plants.DataDir != "", "--data-dir must not be empty")
	check(c.Plants.PostgresMaxConns > 0 && c.Plants.PostgresMaxConns <= math.MaxInt32,
		"--postgres-max-conns %d: want a positive number", c.Plants.PostgresMaxConns)
	check(c.Plants.PostgresConnectTimeout > 0, "--postgres-connect-timeout %v: must be positive", c.Plants.PostgresConnectTimeout)
	check(c.Plants.PostgresStatementTimeout > 0, "--postgres-statement-timeout %v: must be positive", c.Plants.PostgresStatementTimeout)
	_, levelErr := telemetry.ParseLevel(c.Telemetry.LogLevel) // the levels PUT /loglevel accepts too
	check(levelErr == nil, "--log-level %q: %v", c.Telemetry.LogLevel, levelErr)
	check(c.Telemetry.LogFormat == "json" || c.Telemetry.LogFormat == "console",
		"--log-format %q: want json or console", c.Telemetry.LogFormat)
	check(c.Auth.TokensFile != "" || len(c.Auth.Tokens) > 0, "%v", auth.ErrNoTokens)
	if len(errs) == 0 {
		return nil
	}
	// One line, even when several values are wrong.
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

func printUsage(fs *flag.FlagSet) {
	fmt.Fprintf(fs.Output(), "usage: plantstore [flags]\n       plantstore version | healthcheck\n\n"+
		"Every flag has an environment twin: --http-addr is %s.\n\n", envVar("http-addr"))
	fs.PrintDefaults()
}
