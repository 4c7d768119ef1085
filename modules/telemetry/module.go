package telemetry

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
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
		newRegistry,
		func(reg *prometheus.Registry) prometheus.Registerer { return reg },
		newHTTPMetrics,
		newTracing,
		func(t *Tracing) trace.TracerProvider { return t.TracerProvider() },
		httpapi.AsAdminRoutes(metricsRoute),
		httpapi.AsAdminRoutes(logLevelRoutes),
		fx.Annotate(func(m *httpMetrics) httpapi.Middleware { return m.Middleware }, fx.ResultTags(`name:"metrics"`)),
		fx.Annotate(AccessLog, fx.ResultTags(`name:"access_log"`)),
		fx.Annotate(func(t *Tracing) httpapi.Middleware { return t.Middleware }, fx.ResultTags(`name:"tracing"`)),
	),
)

// Log lines are buffered and written at most logFlushInterval late: one
// write system call per access-log line cost the create path about a tenth
// of its throughput. Stopping the app flushes, so only a process killed
// outright (SIGKILL, OOM) loses its last lines.
const (
	logBufferSize    = 256 << 10
	logFlushInterval = 200 * time.Millisecond
)

func newLogger(cfg Config, lc fx.Lifecycle) (*zap.Logger, zap.AtomicLevel, error) {
	// Hiding the file's Sync: fsync on a pipe or terminal fails (EINVAL), and
	// a flush to the kernel is all a log stream needs.
	stdout := zapcore.AddSync(struct{ io.Writer }{os.Stdout})
	out := &zapcore.BufferedWriteSyncer{WS: stdout, Size: logBufferSize, FlushInterval: logFlushInterval}
	log, level, err := newLoggerTo(cfg, out)
	if err != nil {
		return nil, level, err
	}
	lc.Append(fx.StopHook(out.Stop)) // flushes what is buffered
	return log, level, nil
}

// newTracing builds the tracer provider and flushes it on stop. Every
// constructor that needs it runs before the http module registers its
// listeners' hooks, so this stop hook runs after the listeners drain.
func newTracing(lc fx.Lifecycle, log *zap.Logger) (*Tracing, error) {
	t, err := buildTracing(context.Background(), log)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(t.Shutdown))
	return t, nil
}
