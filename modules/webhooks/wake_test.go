package webhooks

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeChanges is a change log's Wait alone: commit closes the channel
// Wait gave and makes the next, as a store's commit does. Make it inside
// the synctest bubble: the loop waiting on its channel is then durably
// blocked.
type fakeChanges struct {
	mu   sync.Mutex
	next chan struct{}
}

func newFakeChanges() *fakeChanges { return &fakeChanges{next: make(chan struct{})} }

func (c *fakeChanges) Wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

func (c *fakeChanges) commit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.next)
	c.next = make(chan struct{})
}

// A change the store tells of is claimed at once, not at the next poll
// (every 500 ms by default), on synctest's clock with the flags'
// defaults: an event whose change is not told of waits; one told of is
// attempted at the moment of its commit; the changes told of within
// wakeGap of a wake wake the loop once more, at the gap's end.
func TestAChangeWakesTheEndpointsLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		receiver := &inProcessReceiver{status: http.StatusNoContent}
		changes := newFakeChanges()
		store, _ := startInProcess(t, flagDefaults(), receiver, WakeOn(changes))
		synctest.Wait() // the loops' first claims, at their start, found nothing
		start := time.Now()
		attemptsAt := func() []time.Duration {
			var at []time.Duration
			for _, a := range receiver.received() {
				at = append(at, a.at.Sub(start))
			}
			return at
		}

		createFerns(t, store, 1)
		synctest.Wait()
		if at := attemptsAt(); len(at) != 0 {
			t.Fatalf("attempts at %v before the change was told of, want none before the poll at 500ms", at)
		}
		changes.commit()
		synctest.Wait()
		if at, want := attemptsAt(), []time.Duration{0}; !slices.Equal(at, want) {
			t.Fatalf("attempts at %v, want %v: the told change's event at once", at, want)
		}

		// Within the gap after that wake: claimed at its end.
		createFern(t, store, 2)
		changes.commit()
		synctest.Wait()
		if at, want := attemptsAt(), []time.Duration{0}; !slices.Equal(at, want) {
			t.Fatalf("attempts at %v within the gap after a wake, want still %v", at, want)
		}
		time.Sleep(wakeGap)
		synctest.Wait()
		if at, want := attemptsAt(), []time.Duration{0, wakeGap}; !slices.Equal(at, want) {
			t.Fatalf("attempts at %v, want %v: the gap's change at its end", at, want)
		}

		// After a quiet while, at once again.
		time.Sleep(100 * time.Millisecond)
		createFern(t, store, 3)
		changes.commit()
		synctest.Wait()
		want := []time.Duration{0, wakeGap, wakeGap + 100*time.Millisecond}
		if at := attemptsAt(); !slices.Equal(at, want) {
			t.Fatalf("attempts at %v, want %v: a change after a quiet while at once", at, want)
		}
		ids := map[string]bool{}
		for _, a := range receiver.received() {
			ids[a.id] = true
		}
		if len(ids) != 3 {
			t.Fatalf("%d events among the 3 attempts, want each once", len(ids))
		}
	})
}
