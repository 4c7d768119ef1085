package webhooks

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// Config is the webhooks part of the program's configuration. Without a
// File, nothing is sent and nothing is written to the outbox.
type Config struct {
	File         string        // --webhooks-file: the endpoints (YAML or JSON); reloaded on change
	AllowPrivate bool          // --webhooks-allow-private: loopback and private destinations too (development, tests)
	AllowHTTP    bool          // --webhooks-allow-http: plain http URLs too (development, tests)
	Timeout      time.Duration // --webhooks-timeout: one attempt, from dial to the answer's end
	Retries      Schedule      // --webhooks-retry-schedule: the waits before each retry
	Concurrency  int           // --webhooks-concurrency: attempts in flight per endpoint and replica
	PollInterval time.Duration // --webhooks-poll-interval: how often each endpoint's due deliveries are looked for
	// API serves the endpoints under /webhooks/endpoints (--webhooks-api):
	// made, changed and removed through the API, kept in the store.
	API bool
	// DisableAfter pauses an endpoint whose attempts all failed for that
	// long (--webhooks-disable-after; 0: never).
	DisableAfter time.Duration
}

// DefaultDisableAfter is --webhooks-disable-after's default: the changes'
// default retention, past which a replay could not give back what the
// endpoint missed anyway.
const DefaultDisableAfter = 72 * time.Hour

// DefaultRetries spreads eight attempts over about 27 hours, as Standard
// Webhooks' reference sender does: the first retry soon after a blip, the
// last ones far apart for a receiver that is down for hours.
var DefaultRetries = Schedule{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Bounds of the durations a Config accepts, whatever spells them (flag,
// environment, a Config built in code): past them a wait, its ±20% jitter
// or a lease (twice the timeout) stops meaning what it says, and near
// Duration's limit overflows into a negative one, due at once.
const (
	// MaxRetryWait bounds each wait of the retry schedule, and a
	// receiver's Retry-After in either of its forms (seconds or a date).
	MaxRetryWait = 48 * time.Hour
	// MaxTimeout bounds --webhooks-timeout: a killed replica's claimed
	// events wait a lease of twice as long plus 10 s before another takes
	// them.
	MaxTimeout = 10 * time.Minute
)

// Schedule is the wait before each retry; its length is the number of
// retries after the first attempt.
type Schedule []time.Duration

func (s Schedule) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// scheduleFlag is --webhooks-retry-schedule: setting it replaces the
// schedule, so that the flag wins over its environment twin.
type scheduleFlag struct{ s *Schedule }

func (f scheduleFlag) String() string {
	if f.s == nil {
		return ""
	}
	return f.s.String()
}

func (f scheduleFlag) Set(v string) error {
	var out Schedule
	for part := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			return errors.New("positive durations separated by commas, such as 5s,5m,30m")
		}
		if d > MaxRetryWait {
			return fmt.Errorf("each wait at most %v, not %v", MaxRetryWait, d)
		}
		out = append(out, d)
	}
	*f.s = out
	return nil
}

// RegisterFlags defines the webhooks flags on fs, each filling its field of
// c with its default.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.File, "webhooks-file", "", "file of webhook endpoints (YAML or JSON: name, url, secrets, format, events); reloaded on change; none sends no webhooks")
	fs.BoolVar(&c.AllowPrivate, "webhooks-allow-private", false, "let webhooks reach loopback, private, link-local and other internal addresses (development and tests only)")
	fs.BoolVar(&c.AllowHTTP, "webhooks-allow-http", false, "let webhook URLs use plain http (development and tests only)")
	fs.DurationVar(&c.Timeout, "webhooks-timeout", 10*time.Second, "how long one webhook attempt may take, connecting and the answer included")
	c.Retries = DefaultRetries
	fs.Var(scheduleFlag{&c.Retries}, "webhooks-retry-schedule", "the waits before each retry of a failed webhook, comma-separated; after the last, the event is dead-lettered")
	fs.IntVar(&c.Concurrency, "webhooks-concurrency", 16, "webhook attempts in flight at once per endpoint (and replica)")
	fs.DurationVar(&c.PollInterval, "webhooks-poll-interval", 500*time.Millisecond, "how often each endpoint's due webhook deliveries are looked for")
	fs.BoolVar(&c.API, "webhooks-api", false, "serve the webhook endpoints under /webhooks/endpoints on the API listener (scope webhooks:manage), kept in the store (bolt or postgres)")
	fs.DurationVar(&c.DisableAfter, "webhooks-disable-after", DefaultDisableAfter, "disable a webhook endpoint whose attempts all failed for this long (0: never)")
}

// Validate reports every value of c that its flag does not accept, one
// error per problem, each naming the flag. The file itself is read and
// checked when the module starts (NewEndpointsFile), also exit code 2.
func (c Config) Validate() error {
	var errs []error
	if c.Timeout <= 0 || c.Timeout > MaxTimeout {
		errs = append(errs, fmt.Errorf("--webhooks-timeout %v: must be positive and at most %v", c.Timeout, MaxTimeout))
	}
	if len(c.Retries) == 0 {
		errs = append(errs, errors.New("--webhooks-retry-schedule: must list at least one wait"))
	}
	for _, d := range c.Retries {
		if d <= 0 || d > MaxRetryWait {
			errs = append(errs, fmt.Errorf("--webhooks-retry-schedule %v: each wait must be positive and at most %v", c.Retries, MaxRetryWait))
			break
		}
	}
	if c.Concurrency < 1 || c.Concurrency > 256 {
		errs = append(errs, fmt.Errorf("--webhooks-concurrency %d: must be between 1 and 256", c.Concurrency))
	}
	if c.PollInterval < 10*time.Millisecond || c.PollInterval > time.Minute {
		errs = append(errs, fmt.Errorf("--webhooks-poll-interval %v: must be between 10ms and 1m", c.PollInterval))
	}
	if c.DisableAfter < 0 || (c.DisableAfter > 0 && c.DisableAfter < time.Minute) {
		errs = append(errs, fmt.Errorf("--webhooks-disable-after %v: must be 0 (never) or at least 1m", c.DisableAfter))
	}
	return errors.Join(errs...)
}

// On reports whether webhooks are sent: a file of endpoints, or the
// API's.
func (c Config) On() bool { return c.File != "" || c.API }

// withDefaults fills what a Config built without its flags leaves zero,
// so that the constructors work without Fx and without flags.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if len(c.Retries) == 0 {
		c.Retries = DefaultRetries
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	return c
}

// lease is how long a claimed delivery stays with its sender: well past an
// attempt's end, so that only a sender that died loses it to another.
func (c Config) lease() time.Duration { return 2*c.Timeout + 10*time.Second }
