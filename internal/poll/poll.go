// Package poll waits for a condition that real I/O brings about: a
// process that comes up, a file the watcher reloads, a socket that
// answers, a database or a container that reaches a state. Nothing
// tells the waiter when such a condition holds, so it asks again and
// again, within a bound that guards against a hang and is no timing
// expectation.
//
// Time-dependent logic in Go (timers, tickers, retry schedules, batching
// windows, goroutines waking each other) is not polled: its tests run
// under testing/synctest, whose fake clock and synctest.Wait give exact
// answers at once. poll is for what a synctest bubble cannot hold:
// sockets, the kernel's file events, other processes, the runtime's own
// goroutines.
package poll

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Until calls cond at once, then again every interval (the pause between
// the end of a call and the next) until it holds, cond stops the poll,
// ctx ends or limit has passed since the first call. The last call is
// made at limit, however limit divides by interval: a poll of every 10 ms
// for 25 ms calls cond at 0, 10, 20 and 25 ms. The first call is made
// whatever ctx and limit; a limit of 0 or less makes it the only one.
//
// cond's ok reports whether the condition holds (then its err is ignored);
// when it does not, err, if any, says why. The last reason is in the
// error Until returns when limit passes or ctx ends, wrapped, as is ctx's
// cause. cond returns Stop(err) for a state it will not leave (a process
// that exited), which ends the poll at once with err.
//
// interval must be positive.
func Until(ctx context.Context, interval, limit time.Duration, cond func() (ok bool, err error)) error {
	if interval <= 0 {
		panic(fmt.Sprintf("poll: interval %v, want it positive", interval))
	}
	deadline := time.Now().Add(limit)
	var pause *time.Timer
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if s, stopped := errors.AsType[*stopError](err); stopped {
			return s.err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return withLast(fmt.Errorf("not within %v", limit), err)
		}
		if pause == nil {
			pause = time.NewTimer(min(interval, left))
			defer pause.Stop()
		} else {
			pause.Reset(min(interval, left))
		}
		select {
		case <-pause.C:
		case <-ctx.Done():
			return withLast(context.Cause(ctx), err)
		}
	}
}

// withLast is err, telling the last reason cond gave, if any.
func withLast(err, last error) error {
	if last == nil {
		return err
	}
	return fmt.Errorf("%w (last: %w)", err, last)
}

// Stop marks err as the end of a poll: Until returns it (unwrapped) at
// once, not waiting for limit. err must not be nil: a poll that ended with
// nil would pass for one whose condition held.
func Stop(err error) error {
	if err == nil {
		panic("poll: Stop(nil)")
	}
	return &stopError{err}
}

type stopError struct{ err error }

func (s *stopError) Error() string { return "poll stopped: " + s.err.Error() }
func (s *stopError) Unwrap() error { return s.err }

// Wait is Until for a test, bounded by limit alone: it returns once cond
// holds, and fails t if cond stopped the poll or limit passed, as
// "waiting for <what>: <Until's error>".
func Wait(t testing.TB, interval, limit time.Duration, what string, cond func() (ok bool, err error)) {
	t.Helper()
	// Not t.Context(): it is canceled before the cleanups, where a wait
	// must still have its bound.
	if err := Until(context.Background(), interval, limit, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
