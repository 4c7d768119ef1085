package poll

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// calls is a condition that never holds, recording when (on the bubble's
// clock, from start) each call began; call n says "not yet n".
type calls struct {
	start time.Time
	at    []time.Duration
	took  time.Duration // how long each call lasts
}

func (c *calls) cond() (bool, error) {
	c.at = append(c.at, time.Since(c.start))
	time.Sleep(c.took)
	return false, fmt.Errorf("not yet %d", len(c.at))
}

func newCalls() *calls { return &calls{start: time.Now()} }

func ms(ds ...int) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d) * time.Millisecond
	}
	return out
}

// A condition that never holds is called at once, then every interval,
// the last call at limit; the error names limit and carries the last
// call's reason.
func TestUntilCallsEveryIntervalUpToTheLimit(t *testing.T) {
	cases := []struct {
		interval, limit time.Duration
		want            []time.Duration
		err             string
	}{
		{10 * time.Millisecond, 100 * time.Millisecond, ms(0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100), "not within 100ms (last: not yet 11)"},
		{10 * time.Millisecond, 25 * time.Millisecond, ms(0, 10, 20, 25), "not within 25ms (last: not yet 4)"},
		{10 * time.Millisecond, 10 * time.Millisecond, ms(0, 10), "not within 10ms (last: not yet 2)"},
		{time.Second, 0, ms(0), "not within 0s (last: not yet 1)"},
		{time.Second, -time.Second, ms(0), "not within -1s (last: not yet 1)"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("every %v for %v", tc.interval, tc.limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCalls()
				err := Until(context.Background(), tc.interval, tc.limit, c.cond)
				if !slices.Equal(c.at, tc.want) {
					t.Fatalf("calls at %v, want %v", c.at, tc.want)
				}
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Until = %v, want %q", err, tc.err)
				}
				if took, want := time.Since(c.start), max(tc.limit, 0); took != want {
					t.Fatalf("Until returned after %v, want %v", took, want)
				}
			})
		})
	}
}

// The production values of a slow caller: every 500 ms for two minutes is
// 241 calls.
func TestUntilCallsCountForALongLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCalls()
		err := Until(context.Background(), 500*time.Millisecond, 2*time.Minute, c.cond)
		if len(c.at) != 241 || c.at[240] != 2*time.Minute {
			t.Fatalf("%d calls, the last at %v; want 241, the last at 2m0s", len(c.at), c.at[len(c.at)-1])
		}
		if err == nil || err.Error() != "not within 2m0s (last: not yet 241)" {
			t.Fatalf("Until = %v", err)
		}
	})
}

// interval is the pause after a call, not the period: calls lasting 3 ms
// every 10 ms begin 13 ms apart, and the last still begins at limit.
func TestUntilPausesIntervalAfterEachCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCalls()
		c.took = 3 * time.Millisecond
		err := Until(context.Background(), 10*time.Millisecond, 30*time.Millisecond, c.cond)
		if want := ms(0, 13, 26, 30); !slices.Equal(c.at, want) {
			t.Fatalf("calls at %v, want %v", c.at, want)
		}
		if err == nil || err.Error() != "not within 30ms (last: not yet 4)" {
			t.Fatalf("Until = %v", err)
		}
		if took := time.Since(c.start); took != 33*time.Millisecond {
			t.Fatalf("Until returned after %v, want 33ms (the last call's end)", took)
		}
	})
}

// The last reason is wrapped: a caller can tell what it was.
func TestUntilWrapsTheLastReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("connection refused")
		err := Until(context.Background(), time.Millisecond, 5*time.Millisecond, func() (bool, error) { return false, refused })
		if !errors.Is(err, refused) || err.Error() != "not within 5ms (last: connection refused)" {
			t.Fatalf("Until = %v, want it to wrap %v", err, refused)
		}
		err = Until(context.Background(), time.Millisecond, 5*time.Millisecond, func() (bool, error) { return false, nil })
		if err == nil || err.Error() != "not within 5ms" {
			t.Fatalf("Until with no reason = %v, want %q", err, "not within 5ms")
		}
	})
}

// Once cond holds, Until returns nil at once, whatever err cond gave with it.
func TestUntilReturnsOnceCondHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start, n := time.Now(), 0
		err := Until(context.Background(), 10*time.Millisecond, time.Hour, func() (bool, error) {
			n++
			return n == 4, errors.New("ignored once it holds")
		})
		if err != nil || n != 4 || time.Since(start) != 30*time.Millisecond {
			t.Fatalf("Until = %v after %d calls and %v, want nil after 4 calls and 30ms", err, n, time.Since(start))
		}
	})
}

// ctx's end ends the poll at once, with ctx's cause and the last reason.
func TestUntilEndsWithCtx(t *testing.T) {
	t.Run("canceled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(35*time.Millisecond, cancel)
			c := newCalls()
			err := Until(ctx, 10*time.Millisecond, time.Hour, c.cond)
			if want := ms(0, 10, 20, 30); !slices.Equal(c.at, want) {
				t.Fatalf("calls at %v, want %v", c.at, want)
			}
			if !errors.Is(err, context.Canceled) || err.Error() != "context canceled (last: not yet 4)" {
				t.Fatalf("Until = %v", err)
			}
			if took := time.Since(c.start); took != 35*time.Millisecond {
				t.Fatalf("Until returned after %v, want 35ms (the cancel)", took)
			}
		})
	})
	t.Run("cause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			ended := errors.New("the run ended")
			time.AfterFunc(15*time.Millisecond, func() { cancel(ended) })
			err := Until(ctx, 10*time.Millisecond, time.Hour, newCalls().cond)
			if !errors.Is(err, ended) || err.Error() != "the run ended (last: not yet 2)" {
				t.Fatalf("Until = %v", err)
			}
		})
	})
	t.Run("done before", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			c := newCalls()
			err := Until(ctx, 10*time.Millisecond, time.Hour, c.cond)
			if !slices.Equal(c.at, ms(0)) || !errors.Is(err, context.Canceled) || time.Since(c.start) != 0 {
				t.Fatalf("Until = %v, calls at %v; want one call and context canceled at once", err, c.at)
			}
		})
	})
}

// Stop ends the poll at once with the error it marks, unwrapped.
func TestStopEndsThePollAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exited := errors.New("exit status 1")
		start, n := time.Now(), 0
		err := Until(context.Background(), 10*time.Millisecond, time.Hour, func() (bool, error) {
			if n++; n == 3 {
				return false, Stop(exited)
			}
			return false, errors.New("not up")
		})
		if !errors.Is(err, exited) || err.Error() != "exit status 1" || n != 3 || time.Since(start) != 20*time.Millisecond {
			t.Fatalf("Until = %v after %d calls and %v, want %v after 3 calls and 20ms", err, n, time.Since(start), exited)
		}
	})
}

func TestMisusePanics(t *testing.T) {
	for what, f := range map[string]func(){
		"interval 0": func() { _ = Until(context.Background(), 0, time.Second, func() (bool, error) { return true, nil }) },
		"Stop(nil)":  func() { _ = Stop(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", what)
				}
			}()
			f()
		}()
	}
}

// fakeT records what Wait fails the test with, ending the goroutine as
// t.Fatalf does.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// wait runs Wait with a fakeT, returning what it failed with and when it
// returned.
func wait(interval, limit time.Duration, what string, cond func() (bool, error)) (string, time.Duration) {
	ft, start, done := &fakeT{}, time.Now(), make(chan struct{})
	go func() {
		defer close(done)
		Wait(ft, interval, limit, what, cond)
	}()
	<-done
	return ft.failed, time.Since(start)
}

func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		failed, took := wait(10*time.Millisecond, 50*time.Millisecond, "the third call", func() (bool, error) { n++; return n == 3, nil })
		if failed != "" || took != 20*time.Millisecond {
			t.Fatalf("Wait failed with %q after %v, want it to return after 20ms", failed, took)
		}
		failed, took = wait(10*time.Millisecond, 50*time.Millisecond, "the new token", func() (bool, error) { return false, errors.New("1 token") })
		if want := "waiting for the new token: not within 50ms (last: 1 token)"; failed != want || took != 50*time.Millisecond {
			t.Fatalf("Wait failed with %q after %v, want %q after 50ms", failed, took, want)
		}
		failed, took = wait(10*time.Millisecond, 50*time.Millisecond, "the server", func() (bool, error) { return false, Stop(errors.New("exit status 2")) })
		if want := "waiting for the server: exit status 2"; failed != want || took != 0 {
			t.Fatalf("Wait failed with %q after %v, want %q at once", failed, took, want)
		}
	})
}
