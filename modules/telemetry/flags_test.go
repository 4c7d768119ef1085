package telemetry

import (
	"flag"
	"testing"
)

// TestConfigOwnsItsFlags: the telemetry Config registers the logging flags
// and validates itself, one line per problem.
func TestConfigOwnsItsFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := c.Validate(); err != nil || c.LogLevel != "info" || c.LogFormat != "json" {
		t.Fatalf("defaults %+v validate to %v", c, err)
	}
	if err := fs.Parse([]string{"--log-level=loud", "--log-format=xml"}); err != nil {
		t.Fatal(err)
	}
	want := "--log-level \"loud\": want debug, info, warn or error\n--log-format \"xml\": want json or console"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate = %v, want %q", err, want)
	}
}
