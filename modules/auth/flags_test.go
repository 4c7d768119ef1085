package auth

import (
	"errors"
	"flag"
	"slices"
	"testing"
)

// TestConfigOwnsItsFlags: the auth Config registers its flags and
// validates itself; --tokens is split as it is set, and set again it
// replaces the list (a flag wins over its environment twin).
func TestConfigOwnsItsFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := c.Validate(); !errors.Is(err, errNoTokens) {
		t.Fatalf("Validate without tokens = %v, want errNoTokens", err)
	}
	if err := fs.Parse([]string{"--tokens=a, b", "--tokens=c,,d", "--rate-limit=-1"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Tokens, []string{"c", "d"}) {
		t.Fatalf("tokens %q, want [c d]", c.Tokens)
	}
	if err := c.Validate(); err == nil || err.Error() != "--rate-limit -1: must not be negative (0 turns it off)" {
		t.Fatalf("Validate = %v", err)
	}
}
