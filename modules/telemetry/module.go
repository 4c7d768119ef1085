package telemetry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	httpserver "github.com/plantstore/plantstore/modules/http"
)

// Module provides the logger and its run-time level, the metrics registry,
// the tracer provider, the API chain's "tracing", "metrics" and
// "access_log" middlewares, and the admin routes /metrics and /loglevel.
//
// The app lists this module first, so that its stop hooks run last: the
// tracer provider flushes after the listeners have drained.
var Module = fx.Module("telemetry",
	fx.Provide(
		newLogger,
		NewRegistry,
		func(reg *prometheus.Registry) prometheus.Registerer { return reg },
		NewHTTPMetrics,
		newTracing,
		func(t *Tracing) trace.TracerProvider { return t.TracerProvider() },
		httpserver.AsAdminRoutes(MetricsRoute),
		httpserver.AsAdminRoutes(LogLevelRoutes),
		fx.Annotate(func(m *HTTPMetrics) httpserver.Middleware { return m.Middleware }, fx.ResultTags(`name:"metrics"`)),
		fx.Annotate(AccessLog, fx.ResultTags(`name:"access_log"`)),
		fx.Annotate(func(t *Tracing) httpserver.Middleware { return t.Middleware }, fx.ResultTags(`name:"tracing"`)),
	),
)

// FxLogger sends Fx's own events through zap; pass it to fx.WithLogger.
func FxLogger(log *zap.Logger) fxevent.Logger {
	l := &fxevent.ZapLogger{Logger: log.Named("fx")}
	l.UseLogLevel(zapcore.DebugLevel) // Fx's wiring chatter only at debug; its errors stay errors
	return l
}

func newLogger(cfg Config, lc fx.Lifecycle) (*zap.Logger, zap.AtomicLevel, error) {
	log, level, err := NewLogger(cfg)
	if err != nil {
		return nil, level, err
	}
	lc.Append(fx.StopHook(func() { _ = log.Sync() }))
	return log, level, nil
}

// newTracing builds the tracer provider and flushes it on stop. Every
// constructor that needs it runs before the http module registers its
// listeners' hooks, so this stop hook runs after the listeners drain.
func newTracing(lc fx.Lifecycle, log *zap.Logger) (*Tracing, error) {
	t, err := NewTracing(context.Background(), log)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(t.Shutdown))
	return t, nil
}
