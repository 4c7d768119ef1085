package httpserver

import (
	"flag"
	"testing"
)

// TestConfigOwnsItsFlags: the listeners' Config registers its flags with
// their defaults and validates itself, one line per problem.
func TestConfigOwnsItsFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	if c.Addr != ":8080" || c.AdminAddr != ":9090" || c.Limits != DefaultLimits {
		t.Fatalf("defaults %+v", c)
	}
	if err := fs.Parse([]string{"--admin-addr=:8080", "--max-header-bytes=0"}); err != nil {
		t.Fatal(err)
	}
	want := "--http-addr and --admin-addr must differ\n--max-header-bytes 0: must be positive"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate = %v, want %q", err, want)
	}
}
