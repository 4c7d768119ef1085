// Package telemetry owns what the service tells operators: the zap logger,
// the Prometheus registry with the HTTP metrics, and the OpenTelemetry
// tracer provider, with the API chain's tracing, metrics and access-log
// middlewares, and their flush on stop.
package telemetry

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Config is the telemetry part of the program's configuration. Tracing is
// configured by the standard OTEL_* environment variables only.
type Config struct {
	LogLevel  string // debug, info, warn, error
	LogFormat string // json or console
}

// newLoggerTo returns a logger writing to out, and the level that the
// admin listener can change at run time.
func newLoggerTo(cfg Config, out zapcore.WriteSyncer) (*zap.Logger, zap.AtomicLevel, error) {
	lvl, err := parseLevel(cfg.LogLevel)
	if err != nil {
		return nil, zap.AtomicLevel{}, fmt.Errorf("log level %q: %w", cfg.LogLevel, err)
	}
	level := zap.NewAtomicLevelAt(lvl)
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.TimeKey = "time"
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch cfg.LogFormat {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		enc = zapcore.NewConsoleEncoder(encCfg)
	default:
		return nil, level, fmt.Errorf("log format %q: want json or console", cfg.LogFormat)
	}
	core := zapcore.NewCore(enc, out, level)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(os.Stderr))), level, nil
}
