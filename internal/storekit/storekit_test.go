package storekit

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A Wait's channel closes at the next Wake, and only then; the Wait after
// a Wake waits for the one after.
func TestWakerClosesAtTheNextWake(t *testing.T) {
	var w Waker
	w.Wake() // nobody waits: nothing to close
	first := w.Wait()
	if second := w.Wait(); second != first {
		t.Fatal("two Waits before a Wake got different channels")
	}
	select {
	case <-first:
		t.Fatal("closed before a Wake")
	default:
	}
	w.Wake()
	select {
	case <-first:
	default:
		t.Fatal("open after a Wake")
	}
	next := w.Wait()
	select {
	case <-next:
		t.Fatal("the Wait after a Wake is closed already")
	default:
	}
}

// The pruner prunes at every interval with the tick's time, until Stop;
// Start after Stop spawns nothing, and Stop without Start does nothing.
func TestPrunerPrunesAtEveryIntervalUntilStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var p Pruner
		var n atomic.Int64
		var last atomic.Int64
		prune := func(_ context.Context, now time.Time) {
			n.Add(1)
			last.Store(int64(now.Sub(start)))
		}
		p.Start(time.Minute, prune)
		p.Start(time.Second, prune) // running already: nothing
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		if got := n.Load(); got != 10 {
			t.Fatalf("%d prunes in ten minutes, want 10", got)
		}
		if got := time.Duration(last.Load()); got != 10*time.Minute {
			t.Fatalf("the last prune was told %v after the start, want 10m", got)
		}
		p.Stop()
		p.Stop()
		p.Start(time.Minute, prune)
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := n.Load(); got != 10 {
			t.Fatalf("%d prunes after Stop and Start, want the 10 before", got)
		}
	})
	var never Pruner
	never.Stop()
}
