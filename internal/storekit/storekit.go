// Package storekit holds the mechanisms every plant store shares around its
// change log, so that each is written once: the Waker that tells the change
// log's followers of a commit, and the Pruner that removes, every so often,
// what is past the retention.
package storekit

import (
	"context"
	"sync"
	"time"
)

// Waker wakes whoever waits for the next commit: each Wait returns the
// channel that the next Wake closes. The zero Waker is ready to use. A
// Wake nobody waits for allocates nothing: the channel is made by the
// first Wait after a Wake.
type Waker struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns the channel closed at the next Wake.
func (w *Waker) Wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

// Wake closes the channel of the waiters, if any; the next Wait makes the
// next one.
func (w *Waker) Wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// Pruner is a goroutine that prunes at every interval, from Start to
// Stop. The zero Pruner is ready to use.
type Pruner struct {
	mu      sync.Mutex
	cancel  context.CancelFunc // stops the goroutine; nil when none runs
	done    chan struct{}      // closed when it ends
	stopped bool               // Stop ran: Start spawns nothing
}

// Start spawns the goroutine that calls prune at every interval, with
// the tick's time, until Stop: prune removes what is older than its
// retention before that time. A prune that fails (a full disk, a write
// timing out under load) is left to the next tick: what is left to prune
// waits, and takes nothing from anyone meanwhile. Start does nothing when
// a goroutine runs already, or once Stop ran. Its context is its own: a
// start hook's ends with the start.
func (p *Pruner) Start(interval time.Duration, prune func(ctx context.Context, now time.Time)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel != nil || p.stopped {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go run(ctx, p.done, interval, prune)
}

func run(ctx context.Context, done chan<- struct{}, interval time.Duration, prune func(context.Context, time.Time)) {
	defer close(done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			prune(ctx, now)
		}
	}
}

// Stop stops the goroutine, if Start spawned one, and waits for it to
// end; a later Start spawns none. Calling it again does nothing.
func (p *Pruner) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.cancel != nil {
		p.cancel()
		<-p.done
		p.cancel = nil
	}
}
