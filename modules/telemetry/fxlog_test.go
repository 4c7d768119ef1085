package telemetry

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestFxLoggerNamesAFailure: a failing start hook is one debug line naming
// the event, the function and the error, beside Fx's rollback; no line is
// above debug (the program reports the failure itself).
func TestFxLoggerNamesAFailure(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	boom := errors.New("boom")
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger { return FxLogger(zap.New(core)) }),
		fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.StartHook(func() error { return boom }))
		}),
	)
	if err := app.Start(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("start = %v, want boom", err)
	}
	var events []string
	for _, e := range logs.All() {
		if e.Level != zapcore.DebugLevel || e.LoggerName != "fx" || e.Message != "failed" || e.ContextMap()["error"] != "boom" {
			t.Errorf("line %s %s %s %v; want fx debug failed with error boom", e.LoggerName, e.Level, e.Message, e.ContextMap())
		}
		events = append(events, e.ContextMap()["event"].(string))
	}
	if len(events) != 3 || events[0] != "OnStart hook" || events[1] != "start, rolling back" || events[2] != "start" {
		t.Errorf("failed events %q; want the OnStart hook, the rollback, the start", events)
	}
}
