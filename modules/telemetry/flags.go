package telemetry

import (
	"errors"
	"flag"
	"fmt"
)

// RegisterFlags defines the logging flags on fs, each filling its field of
// c with its default. Tracing has no flags: the OTEL_* variables set it.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or console")
}

// Validate reports every value of c that its flag does not accept, one
// error per problem, each naming the flag (errors.Join's parts).
func (c Config) Validate() error {
	var errs []error
	if _, err := parseLevel(c.LogLevel); err != nil { // the levels PUT /loglevel accepts too
		errs = append(errs, fmt.Errorf("--log-level %q: %v", c.LogLevel, err))
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("--log-format %q: want json or console", c.LogFormat))
	}
	return errors.Join(errs...)
}
