package filewatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// A file replaced by a rename, as editors and Kubernetes Secret volumes do
// it, is noticed; after Stop nothing is called.
func TestRenameIntoPlaceIsNoticed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "file")
	if err := os.WriteFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 100)
	w := New(path, func() { changed <- struct{}{} }, func(err error) { t.Errorf("watch error: %v", err) })
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file.new"), []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "file.new"), path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the rename was not noticed")
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for len(changed) > 0 {
		<-changed
	}
	if err := os.WriteFile(path, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(changed) != 0 {
		t.Fatal("called after Stop")
	}
}

// settleRun runs settle on channels of its own inside a synctest bubble
// and records when, from the bubble's start, changed was called.
type settleRun struct {
	events chan struct{}
	errs   chan error
	calls  []time.Duration
	errors []error
	done   chan struct{}
}

func startSettle() *settleRun {
	r := &settleRun{events: make(chan struct{}), errs: make(chan error), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(r.done)
		settle(r.events, r.errs, func() { r.calls = append(r.calls, time.Since(start)) }, func(err error) { r.errors = append(r.errors, err) })
	}()
	return r
}

// A burst of events (a truncate, then writes) is one call, quietPeriod after its
// last event; a burst closed by Stop before it settled is no call.
func TestABurstSettlesIntoOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startSettle()
		for range 50 { // 50 events 1ms apart: 0ms to 49ms
			r.events <- struct{}{}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if want := []time.Duration{49*time.Millisecond + quietPeriod}; !slices.Equal(r.calls, want) {
			t.Fatalf("calls at %v, want %v", r.calls, want)
		}
		r.errs <- errors.New("overflow")
		r.events <- struct{}{} // a burst that Stop cuts short
		time.Sleep(quietPeriod / 2)
		close(r.events)
		<-r.done
		if len(r.calls) != 1 || len(r.errors) != 1 || r.errors[0].Error() != "overflow" {
			t.Fatalf("after the stop: calls %v, errors %v; want the one call and the one error", r.calls, r.errors)
		}
	})
}

// A directory that is never quiet for quietPeriod still gets a call maxDelay
// after each burst's first event.
func TestABusyDirectoryIsReadEveryMaxDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startSettle()
		for range 200 { // an event every 30ms from 0 to 5970ms
			r.events <- struct{}{}
			time.Sleep(30 * time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		// Bursts start at 0, 2010ms (the first event after the call at
		// 2000ms) and 4020ms; the last goes quiet after its event at 5970ms.
		want := []time.Duration{maxDelay, 2010*time.Millisecond + maxDelay, 5970*time.Millisecond + min(quietPeriod, 4020*time.Millisecond+maxDelay-5970*time.Millisecond)}
		if !slices.Equal(r.calls, want) {
			t.Fatalf("calls at %v, want %v", r.calls, want)
		}
		close(r.errs)
		<-r.done
	})
}
