package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// The flag package reports a bad value as `invalid value "5" for flag
// -drain-delay: parse error`, which says neither what was wanted nor how to
// write it. explainValues wraps each flag's value so that a value it cannot
// parse becomes a valueError naming the flag (or its environment twin) and
// what it wants; explainParseError turns the flag package's other errors
// (unknown flag, missing value) into the same one-line style.

// valueError is a value a flag cannot parse.
type valueError struct {
	setting string // --drain-delay, or PLANTSTORE_DRAIN_DELAY when it came from there
	value   string
	want    string
}

func (e *valueError) Error() string {
	return fmt.Sprintf("%s %q: want %s", e.setting, e.value, e.want)
}

// explainedValue is a flag's value whose Set failures are valueErrors. The
// last one is also kept in *last: the flag package formats a command-line
// Set error with %v, so it cannot be found again in the error it returns.
type explainedValue struct {
	flag.Value
	name string
	last **valueError
}

func (v explainedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		e := &valueError{setting: "--" + v.name, value: s, want: wantOf(v.Value, err)}
		*v.last = e
		return e
	}
	return nil
}

// IsBoolFlag keeps --pprof usable without a value.
func (v explainedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// wantOf describes the values a flag takes, from the type of its value.
func wantOf(v flag.Value, err error) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 5s, 250ms or 1m30s"
	case int, int64:
		return "a whole number such as 16"
	case float64:
		return "a number such as 2.5"
	case bool:
		return "true or false"
	default:
		return err.Error()
	}
}

// explainValues wraps every flag of fs; call explain on Parse's error. Use
// fs only to parse afterwards: its usage would show the wrappers' zero
// values.
func explainValues(fs *flag.FlagSet) (explain func(error) error) {
	var last *valueError
	fs.VisitAll(func(f *flag.Flag) {
		f.Value = explainedValue{Value: f.Value, name: f.Name, last: &last}
	})
	return func(err error) error {
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return err
		}
		// From an environment twin, ff wraps the valueError with %w: name
		// the variable, which is what the user wrote.
		var fromEnv *valueError
		if errors.As(err, &fromEnv) {
			e := *fromEnv
			e.setting = envVar(strings.TrimPrefix(e.setting, "--"))
			return &e
		}
		if last != nil {
			return last
		}
		return explainParseError(err)
	}
}

// explainParseError rewords the flag package's messages about the command
// line's shape; ff prefixes them with "error parsing commandline arguments".
func explainParseError(err error) error {
	msg := err.Error()
	if inner := errors.Unwrap(err); inner != nil {
		msg = inner.Error()
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", name)
	}
	return errors.New(msg)
}
