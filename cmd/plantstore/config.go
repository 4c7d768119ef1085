package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"

	"github.com/plantstore/plantstore/modules/auth"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/telemetry"
	"github.com/plantstore/plantstore/modules/webhooks"
)

// config is every module's configuration, parsed from flags and their
// PLANTSTORE_* environment twins (a flag wins over its twin). Each module's
// Config defines its own flags and validates itself; main composes them.
type config struct {
	HTTP      httpserver.Config
	Auth      auth.Config
	Plants    plants.Config
	Telemetry telemetry.Config
	Webhooks  webhooks.Config

	// StartTimeout bounds the whole start: every OnStart hook, the postgres
	// migrations (and the wait for another replica's) among them.
	StartTimeout time.Duration

	// settings says where each value came from, so that an error names
	// the setting as the user wrote it (see settingNames).
	settings settingNames
}

// defaultStartTimeout is --start-timeout's default: longer than Fx's 15s,
// so that a replica queued behind another's migration on the advisory lock
// is not killed for waiting.
const defaultStartTimeout = time.Minute

// envPrefix names the environment twins: --http-addr is PLANTSTORE_HTTP_ADDR.
const envPrefix = "PLANTSTORE"

// parseConfig parses and validates args (without the program name). Any
// error is meant to be printed as one line before exiting with code 2.
func parseConfig(args []string, usage io.Writer) (config, error) {
	var cfg config
	settings, err := parseFlags(newFlagSet(&cfg), args, usage)
	cfg.settings = settings
	if err != nil {
		return cfg, err
	}
	return cfg, settings.rename(oneLine(cfg.validate()))
}

// parseFlags parses args and the environment twins into fs's flags, and
// says which flags took their value from the environment. On --help it
// prints the usage of fs's flags to usage and returns flag.ErrHelp; any
// other error is one line naming the flag or variable.
func parseFlags(fs *flag.FlagSet, args []string, usage io.Writer) (settingNames, error) {
	var defaults bytes.Buffer // fs's defaults, for --help: fs's values are wrapped below
	fs.SetOutput(&defaults)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard) // errors are reported by the caller, on one line
	fs.Usage = func() {}     // the usage is for --help only: a mistake is one line
	explain := explainValues(fs)
	// The command line first, then ff fills the flags it left unset from
	// their twins (ff's own order; with no arguments its command-line pass
	// sets nothing): whatever is set after the first pass only came from the
	// environment.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(usage, fs.Name(), defaults.String())
		}
		return nil, explain(err)
	}
	rest := fs.Args()
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	if err := ff.Parse(fs, nil, ff.WithEnvVarPrefix(envPrefix)); err != nil {
		return nil, explain(err)
	}
	fromEnv := settingNames{}
	fs.Visit(func(f *flag.Flag) {
		if !onCommandLine[f.Name] {
			fromEnv[f.Name] = true
		}
	})
	if len(rest) > 0 {
		return fromEnv, fmt.Errorf("unexpected argument %q", rest[0])
	}
	return fromEnv, nil
}

// settingNames holds the flags whose value came from their environment
// twin. An error about such a value names the variable, which is what the
// user wrote: PLANTSTORE_STORE "sqlite": ..., not --store "sqlite": ...
type settingNames map[string]bool

// settingSubject is a flag an error is about: followed by a colon, or by
// its value and a colon (--store "sqlite": ..., --max-body-bytes -5: ...,
// api listener --http-addr :8080: ...). A flag merely mentioned, as in
// advice to set it, is not one.
var settingSubject = regexp.MustCompile(`--([a-z][a-z0-9-]*)(:| "(?:[^"\\]|\\.)*":| [^ ]+:)`)

// rename rewrites err's message so that each flag it is about that took
// its value from the environment is named by its variable. errors.Is and
// errors.As still see err.
func (s settingNames) rename(err error) error {
	if err == nil || len(s) == 0 {
		return err
	}
	msg := err.Error()
	renamed := settingSubject.ReplaceAllStringFunc(msg, func(m string) string {
		name := settingSubject.FindStringSubmatch(m)[1]
		if !s[name] {
			return m
		}
		return envVar(name) + strings.TrimPrefix(m, "--"+name)
	})
	if renamed == msg {
		return err
	}
	return &renamedError{msg: renamed, err: err}
}

type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// newFlagSet defines every flag of the program, each filling its field of
// cfg: each module's own, then main's. The manifest tests read the flags
// from here, so they know every setting the program takes.
func newFlagSet(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("plantstore", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller, on one line
	cfg.HTTP.RegisterFlags(fs)
	cfg.Auth.RegisterFlags(fs)
	cfg.Plants.RegisterFlags(fs)
	cfg.Telemetry.RegisterFlags(fs)
	cfg.Webhooks.RegisterFlags(fs)
	registerStartTimeout(fs, &cfg.StartTimeout)
	return fs
}

func registerStartTimeout(fs *flag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "start-timeout", defaultStartTimeout, "how long the start may take, postgres migrations (and the wait for another replica's) included")
}

// envVar is a flag's environment twin, as ff names it: --http-addr is
// PLANTSTORE_HTTP_ADDR.
func envVar(flagName string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// validate is every module's Validate, then main's own checks.
func (c config) validate() error {
	return errors.Join(
		c.HTTP.Validate(),
		c.Auth.Validate(),
		c.Plants.Validate(),
		c.Telemetry.Validate(),
		c.Webhooks.Validate(),
		validateStartTimeout(c.StartTimeout),
		c.webhooksNeedAnOutbox(),
	)
}

// webhooksNeedAnOutbox refuses webhooks on a store that keeps no outbox
// (memory): it has nowhere durable to keep an event until it is delivered.
func (c config) webhooksNeedAnOutbox() error {
	if k, ok := plants.LookupStore(c.Plants.Store); ok && !k.Outbox && c.Webhooks.On() {
		return webhooks.NoOutboxError(c.Webhooks)
	}
	return nil
}

func validateStartTimeout(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("--start-timeout %v: must be positive", d)
	}
	return nil
}

// oneLine joins the problems errors.Join collected with "; ": a bad
// start is one line, even when several values are wrong.
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	var msgs []string
	var flatten func(error)
	flatten = func(err error) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				flatten(e)
			}
			return
		}
		msgs = append(msgs, err.Error())
	}
	flatten(err)
	return errors.New(strings.Join(msgs, "; "))
}

func printUsage(w io.Writer, name, defaults string) {
	if name == "plantstore" {
		fmt.Fprintf(w, "usage: plantstore [flags]\n       plantstore version | healthcheck | migrate [flags]\n\n")
	} else {
		fmt.Fprintf(w, "usage: plantstore %s [flags]\n\n", name)
	}
	fmt.Fprintf(w, "Every flag has an environment twin: --http-addr is %s.\n\n%s", envVar("http-addr"), defaults)
}
