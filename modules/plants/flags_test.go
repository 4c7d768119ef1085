package plants

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

// parts are the problems Validate joined, one message each.
func parts(err error) []string {
	var msgs []string
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			msgs = append(msgs, parts(e)...)
		}
	} else if err != nil {
		msgs = append(msgs, err.Error())
	}
	return msgs
}

// TestConfigOwnsItsFlags: the plants module's Config, with each store's
// nested in it, registers its flags and validates itself, without main.
func TestConfigOwnsItsFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.RegisterFlags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	want := []string{"changes-retention", "data-dir", "max-body-bytes", "max-import-bytes", "postgres-commit-timeout", "postgres-connect-timeout", "postgres-max-conns",
		"postgres-statement-timeout", "postgres-url", "store"}
	if !slices.Equal(names, want) {
		t.Fatalf("flags %q, want %q", names, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	if c.Store != StoreBolt || c.Bolt.DataDir != "./data" || c.Postgres.MaxConns != 16 || c.ChangesRetention != 72*time.Hour {
		t.Fatalf("defaults %+v", c)
	}

	err := fs.Parse([]string{"--store=postgres", "--postgres-url=postgres://db/plants", "--postgres-max-conns=0", "--data-dir=", "--changes-retention=1m"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Postgres.URL != "postgres://db/plants" {
		t.Fatalf("--postgres-url set %+v", c.Postgres)
	}
	// The data dir is bolt's: empty is fine on postgres.
	if got, want := parts(c.Validate()), []string{"--postgres-max-conns 0: want a positive number"}; !slices.Equal(got, want) {
		t.Fatalf("Validate = %q, want %q", got, want)
	}
	if c.ChangesRetention != time.Minute {
		t.Fatalf("--changes-retention=1m set %v", c.ChangesRetention)
	}
	c.Store, c.MaxBodyBytes, c.ChangesRetention = StoreBolt, 0, 59*time.Second
	got := parts(c.Validate())
	want = []string{"--max-body-bytes 0: must be positive", "--changes-retention 59s: must be at least 1m0s, or 0 to keep every change", "--data-dir must not be empty", "--postgres-max-conns 0: want a positive number"}
	if !slices.Equal(got, want) {
		t.Fatalf("Validate = %q, want %q", got, want)
	}
	c.Store = "sqlite"
	if err := c.Validate(); !slices.Contains(parts(err), `--store "sqlite": want memory, bolt or postgres`) {
		t.Fatalf("Validate = %v", err)
	}
	var none interface{ Unwrap() []error }
	if !errors.As(c.Validate(), &none) {
		t.Fatal("Validate's problems are not errors.Join's parts")
	}
}

// --changes-retention=0 keeps every change (each store's own test shows
// that its zero retention prunes nothing); a negative or a short one is
// refused.
func TestChangesRetentionZeroKeepsEverything(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration
		err  string
	}{
		{"0", 0, ""},
		{"1m", time.Minute, ""},
		{"-1m", -time.Minute, "--changes-retention -1m0s: must be at least 1m0s, or 0 to keep every change"},
		{"1ms", time.Millisecond, "--changes-retention 1ms: must be at least 1m0s, or 0 to keep every change"},
	} {
		var c Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		c.RegisterFlags(fs)
		if err := fs.Parse([]string{"--changes-retention=" + tc.arg}); err != nil {
			t.Fatal(err)
		}
		if c.ChangesRetention != tc.want {
			t.Errorf("--changes-retention=%s set %v, want %v", tc.arg, c.ChangesRetention, tc.want)
		}
		got := strings.Join(parts(c.Validate()), "; ")
		if got != tc.err {
			t.Errorf("--changes-retention=%s: Validate = %q, want %q", tc.arg, got, tc.err)
		}
	}
}
