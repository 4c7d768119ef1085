package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	httpserver "github.com/plantstore/plantstore/modules/http"
)

// Module provides the logger, the metrics registry and the API chain's
// "tracing", "metrics" and "access_log" middlewares.
var Module = fx.Module("telemetry",
	fx.Provide(
		newLogger,
		NewRegistry,
		func(reg *prometheus.Registry) prometheus.Registerer { return reg },
		NewHTTPMetrics,
		httpserver.AsAdminRoutes(MetricsRoute),
		fx.Annotate(func(m *HTTPMetrics) httpserver.Middleware { return m.Middleware }, fx.ResultTags(`name:"metrics"`)),
		fx.Annotate(AccessLog, fx.ResultTags(`name:"access_log"`)),
		fx.Annotate(NewTracing, fx.ResultTags(`name:"tracing"`)),
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
