package main

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/telemetry"
)

// TestFxEventsAtDebugAreTwoLines: with the log level at debug, the whole
// app's wiring is one "started" line and one "stopped" line of the fx
// logger (counts, no stack traces), not a line per constructor, invoke
// and hook.
func TestFxEventsAtDebugAreTwoLines(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := testConfig(t)
	app := newApp(cfg, fx.WithLogger(func() fxevent.Logger { return telemetry.FxLogger(zap.New(core)) }))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	entries := logs.All()
	var msgs []string
	for _, e := range entries {
		msgs = append(msgs, e.LoggerName+" "+e.Level.String()+" "+e.Message)
	}
	if len(entries) != 2 || msgs[0] != "fx debug started" || msgs[1] != "fx debug stopped" {
		t.Fatalf("the fx logger wrote %d lines %q; want [fx debug started, fx debug stopped]", len(entries), msgs)
	}
	started := entries[0].ContextMap()
	for _, count := range []string{"provided", "constructors_run", "invoked", "start_hooks"} {
		if n, _ := started[count].(int64); n < 1 {
			t.Errorf("started line: %s = %v, want at least 1 (%v)", count, started[count], started)
		}
	}
	if n, _ := entries[1].ContextMap()["stop_hooks"].(int64); n < 1 {
		t.Errorf("stopped line: stop_hooks = %d, want at least 1", n)
	}
}
