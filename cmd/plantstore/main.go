// Command plantstore serves the Plant Store API.
//
// The program is a handful of Fx modules: telemetry (logs, metrics,
// traces), auth (bearer tokens), plants (the API and its store) and http
// (the API and admin listeners). main parses the configuration, wires the
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
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"go.uber.org/dig"
	"go.uber.org/fx"

	"github.com/plantstore/plantstore/internal/gcfloor"
	"github.com/plantstore/plantstore/modules/auth"
	httpserver "github.com/plantstore/plantstore/modules/http"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/telemetry"
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
// configuration or a start-up failure, 1 for a failed shutdown.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			return printVersion(stdout)
		case "healthcheck":
			return healthcheck(args[1:], stderr)
		}
	}
	cfg, err := parseConfig(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "plantstore: %v\n", err)
		return 2
	}

	app := newApp(cfg)
	if err := startApp(app); err != nil {
		fmt.Fprintf(stderr, "plantstore: %v\n", dig.RootCause(err))
		return 2
	}
	<-app.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout(cfg))
	defer cancel()
	if err := app.Stop(ctx); err != nil {
		fmt.Fprintf(stderr, "plantstore: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// newApp wires the modules; tests pass extra options such as fx.Populate.
func newApp(cfg config, extra ...fx.Option) *fx.App {
	return fx.New(
		fx.Supply(cfg.HTTP, cfg.Auth, cfg.Plants, cfg.Telemetry),
		telemetry.Module,
		auth.Module,
		plants.Module,
		httpserver.Module,
		fx.WithLogger(telemetry.FxLogger),
		fx.StopTimeout(stopTimeout(cfg)),
		fx.Options(extra...),
	)
}

func startApp(app *fx.App) error {
	if err := app.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), fx.DefaultTimeout)
	defer cancel()
	return app.Start(ctx)
}

// stopTimeout bounds the whole stop: drain, shutdown, then flushing traces
// and closing the store, which get a few seconds of their own.
func stopTimeout(cfg config) time.Duration {
	return cfg.HTTP.DrainDelay + cfg.HTTP.ShutdownTimeout + 5*time.Second
}
