package webhooks

import (
	"flag"
	"io"
	"testing"
	"time"
)

// TestConfigOwnsItsFlags: the webhooks Config registers its flags with
// their defaults and validates itself, one problem per flag.
func TestConfigOwnsItsFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults: Validate = %v", err)
	}
	if c.File != "" || c.AllowPrivate || c.AllowHTTP || c.Timeout != 10*time.Second || c.Concurrency != 16 ||
		c.Retries.String() != "5s,5m0s,30m0s,2h0m0s,5h0m0s,10h0m0s,10h0m0s" {
		t.Fatalf("defaults %+v", c)
	}
	if err := fs.Parse([]string{"--webhooks-retry-schedule=1s, 2m", "--webhooks-timeout=0s", "--webhooks-concurrency=0", "--webhooks-poll-interval=1ms"}); err != nil {
		t.Fatal(err)
	}
	if c.Retries.String() != "1s,2m0s" {
		t.Fatalf("schedule %v", c.Retries)
	}
	want := "--webhooks-timeout 0s: must be positive and at most 10m0s\n--webhooks-concurrency 0: must be between 1 and 256\n--webhooks-poll-interval 1ms: must be between 10ms and 1m"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate = %v, want\n%s", err, want)
	}
	if err := fs.Parse([]string{"--webhooks-retry-schedule=5s,-1s"}); err == nil {
		t.Fatal("a negative wait was accepted")
	}
}

// Every duration is bounded in every way it is given: past a bound a wait,
// its jitter or a lease (twice the timeout) overflows into a negative
// duration, due at once.
func TestConfigBoundsItsDurations(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	for v, want := range map[string]string{
		"5s,49h":       `invalid value "5s,49h" for flag -webhooks-retry-schedule: each wait at most 48h0m0s, not 49h0m0s`,
		"2562047h":     `invalid value "2562047h" for flag -webhooks-retry-schedule: each wait at most 48h0m0s, not 2562047h0m0s`,
		"5s,5m,48h1ns": `invalid value "5s,5m,48h1ns" for flag -webhooks-retry-schedule: each wait at most 48h0m0s, not 48h0m0.000000001s`,
	} {
		if err := fs.Parse([]string{"--webhooks-retry-schedule=" + v}); err == nil || err.Error() != want {
			t.Errorf("--webhooks-retry-schedule=%s: %v, want %s", v, err, want)
		}
	}
	if err := fs.Parse([]string{"--webhooks-retry-schedule=48h", "--webhooks-timeout=10m"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the bounds themselves: Validate = %v", err)
	}
	if err := fs.Parse([]string{"--webhooks-timeout=2562047h"}); err != nil {
		t.Fatal(err)
	}
	c.Retries = Schedule{5 * time.Second, 2562047 * time.Hour} // built in code, past the flag
	want := "--webhooks-timeout 2562047h0m0s: must be positive and at most 10m0s\n" +
		"--webhooks-retry-schedule 5s,2562047h0m0s: each wait must be positive and at most 48h0m0s"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate = %v, want\n%s", err, want)
	}
}

// --webhooks-disable-after is 0 (never) or at least a minute.
func TestConfigBoundsDisableAfter(t *testing.T) {
	for v, want := range map[string]string{
		"0s":  "",
		"1m":  "",
		"72h": "",
		"59s": "--webhooks-disable-after 59s: must be 0 (never) or at least 1m",
		"-1h": "--webhooks-disable-after -1h0m0s: must be 0 (never) or at least 1m",
	} {
		var c Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		c.RegisterFlags(fs)
		if err := fs.Parse([]string{"--webhooks-disable-after=" + v}); err != nil {
			t.Fatal(err)
		}
		err := c.Validate()
		if (want == "" && err != nil) || (want != "" && (err == nil || err.Error() != want)) {
			t.Errorf("--webhooks-disable-after=%s: Validate = %v, want %q", v, err, want)
		}
	}
}
