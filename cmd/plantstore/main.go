// Command plantstore serves the Plant Store API.
//
// The program is a handful of Fx modules: telemetry (logs, metrics,
// traces), auth (bearer tokens), plants (the API and its store), webhooks
// (events about new plants, sent from the store's outbox) and http (the
// API and admin listeners). main parses the configuration, wires the
// modules, starts them, waits for SIGTERM or SIGINT and stops them in
// reverse order: listeners drain, then the store closes, then traces flush
// (so that the store's last spans are exported too).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/cli"
	"github.com/plantstore/plantstore/internal/gcfloor"
	"github.com/plantstore/plantstore/modules/auth"
	"github.com/plantstore/plantstore/modules/console"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/telemetry"
	"github.com/plantstore/plantstore/modules/webhooks"
)

func main() {
	// Go sizes GOMAXPROCS from the container's CPU limit by itself (1.25+),
	// but not GOMEMLIMIT from its memory limit: set it to 90% of the cgroup
	// limit so the GC works harder before the kernel's OOM killer does. An
	// explicit GOMEMLIMIT wins; without a limit this does nothing.
	_, _ = memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(memlimit.FromCgroup))
	// The bolt and postgres stores keep a live heap of a megabyte or two,
	// on which Go collects dozens of times a second under load: no
	// collection below 32 MiB of heap (see gcfloor). An explicit GOGC wins.
	gcfloor.Start(gcfloor.DefaultFloor)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its exit code: 0 after a clean shutdown, 2 for a bad
// configuration or a start-up failure (one line on stderr, nothing on
// stdout), 1 for a failed or interrupted shutdown or a listener that failed.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version", "--version", "-version":
			return printVersion(stdout)
		case "help":
			return help(args[1:], stdout, stderr)
		case "completion":
			return completion(args[1:], stdout, stderr)
		case "healthcheck":
			return healthcheck(args[1:], stdout, stderr)
		case "migrate":
			return migrate(args[1:], stdout, stderr)
		case "plants", "export", "import", "webhooks": // the client side: internal/cli
			return cli.Run(args, cli.IO{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr})
		}
	}
	if wantsHelp(args) {
		if code := serverHelp(stdout, args); code >= 0 {
			return code
		}
	}
	cfg, err := parseConfig(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "plantstore: %v (see plantstore --help)\n", err)
		return 2
	}

	var (
		log     *zap.Logger
		servers *httpserver.Servers
		tracing *telemetry.Tracing
	)
	app := newApp(cfg, fx.Populate(&log, &servers, &tracing))
	if err := startApp(app, cfg.StartTimeout); err != nil {
		fmt.Fprintf(stderr, "plantstore: %v\n", cfg.settings.rename(startError(err, cfg)))
		return 2
	}
	logServing(log, cfg, servers, tracing)
	shutdown := <-app.Wait()
	if code := stop(app, cfg, log, stderr); code != 0 {
		return code
	}
	return shutdown.ExitCode // 1 when a listener failed on its own
}

// stop stops the app: the listeners drain, the store closes, traces flush;
// its last log line says how long that took. A second SIGINT or SIGTERM
// meanwhile stops at once with exit code 1, as most servers do: whoever
// sends it wants the process gone now, and every store is safe to abandon
// (nothing was acknowledged that is not committed). Exit code 1, not 0,
// because requests in flight may have been cut off.
func stop(app *fx.App, cfg config, log *zap.Logger, stderr io.Writer) int {
	began := time.Now()
	// Registered only now: the first signal has been taken by app.Wait.
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(again)
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout(cfg))
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- app.Stop(ctx) }()
	// The logger's buffer was flushed by the telemetry module's stop hook;
	// what is logged after it stays buffered until this Sync.
	defer func() { _ = log.Sync() }()
	select {
	case err := <-stopped:
		if err != nil {
			log.Error("stop failed", zap.Duration("duration", time.Since(began)), zap.Error(err))
			fmt.Fprintf(stderr, "plantstore: shutdown: %v\n", err)
			return 1
		}
		log.Info("stopped", zap.Duration("duration", time.Since(began)))
		return 0
	case sig := <-again:
		log.Warn("stopped at once on a second signal", zap.String("signal", sig.String()),
			zap.Duration("duration", time.Since(began)))
		return 1
	}
}

// listenerFlags name the flag that sets each listener's address.
var listenerFlags = map[string]string{"api": "http-addr", "admin": "admin-addr"}

// newApp wires the modules; tests pass extra options such as fx.Populate.
func newApp(cfg config, extra ...fx.Option) *fx.App {
	return fx.New(
		fx.Supply(cfg.HTTP, cfg.Auth, cfg.Plants, cfg.Telemetry, cfg.Webhooks),
		telemetry.Module,
		auth.Module,
		plants.Module,
		webhooks.Module,
		console.Module,
		httpserver.Module,
		fx.WithLogger(telemetry.FxLogger),
		fx.StopTimeout(stopTimeout(cfg)),
		fx.Options(extra...),
	)
}

// startApp runs the OnStart hooks within timeout (--start-timeout), in
// place of Fx's fixed 15s: a postgres replica may queue that long on the
// migrations' advisory lock.
func startApp(app *fx.App, timeout time.Duration) error {
	if err := app.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := app.Start(ctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		// Fx returns the bare context error, which names nothing.
		return fmt.Errorf("the start did not finish within --start-timeout %v "+
			"(a replica waits there for another's postgres migrations: raise it, or run plantstore migrate first)", timeout)
	}
	return err
}

// stopTimeout bounds the whole stop: drain, shutdown, then flushing traces
// and closing the store, which get a few seconds of their own.
func stopTimeout(cfg config) time.Duration {
	return cfg.HTTP.DrainDelay + cfg.HTTP.ShutdownTimeout + 5*time.Second
}
