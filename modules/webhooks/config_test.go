package webhooks

import (
	"flag"
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
	want := "--webhooks-timeout 0s: must be positive\n--webhooks-concurrency 0: must be between 1 and 256\n--webhooks-poll-interval 1ms: must be between 10ms and 1m"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate = %v, want\n%s", err, want)
	}
	if err := fs.Parse([]string{"--webhooks-retry-schedule=5s,-1s"}); err == nil {
		t.Fatal("a negative wait was accepted")
	}
}
