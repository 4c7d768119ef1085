package webhooks

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/outbox"
)

// wakeGap is the least time between two wakes by the store's changes: a
// change is claimed at once, and a burst of them by one claim per endpoint
// at most every wakeGap.
const wakeGap = 20 * time.Millisecond

// Waker tells of changes as they are committed: changes.ChangeLog's Wait.
type Waker interface {
	// Wait returns a channel closed at the next change.
	Wait() <-chan struct{}
}

// WakeOn makes every endpoint claim at once when w tells of a change,
// rather than at its next poll: the change's deliveries are due from its
// commit. The polls stay, for the changes w does not tell of (another
// replica's, where w is this process's alone; a retry falling due).
func WakeOn(w Waker) Option { return func(d *Dispatcher) { d.waker = w } }

// worker is one endpoint's loop and its attempts.
type worker struct {
	ep   atomic.Pointer[Endpoint]
	gone atomic.Bool // it answered 410, or is disabled: nothing is sent until the file (or the API's endpoint) changes
	// failingSince is when its attempts began to fail, with no success
	// since (Unix nanoseconds; 0: the last one succeeded): past
	// --webhooks-disable-after, an API endpoint is disabled.
	failingSince atomic.Int64
	circuit      *circuit      // open while it is down: see circuit.go
	slots        chan struct{} // attempts in flight
	wake         chan struct{} // a slot freed up, a change was committed, a replay: look for more now
	// backlog says the last claim took all it asked for, so more may be
	// due: only then does a freed slot claim before the next poll.
	backlog atomic.Bool
	stop    chan struct{} // the endpoint left the file

	// handoff holds deliveries that creates wrote already claimed for this
	// worker (see handoff.go); reserved counts them from the create's
	// reservation until they take a slot.
	handoff  chan outbox.Delivery
	reserved atomic.Int64
}

// wakeUp has w claim now rather than at its next poll.
func (w *worker) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default: // a wake is pending already
	}
}

// wakeOnChanges has every endpoint claim at each change the waker tells
// of, until the stop.
func (d *Dispatcher) wakeOnChanges() {
	defer d.loops.Done()
	next := d.waker.Wait()
	for {
		select {
		case <-d.stopping:
			return
		case <-next:
		}
		// The next channel is taken before the claims run, so that a
		// change committed while they run wakes them again.
		next = d.waker.Wait()
		for _, w := range *d.byName.Load() {
			w.wakeUp()
		}
		// A busy store commits far more often than a claim is worth (on
		// postgres every replica's commits wake every replica): the
		// changes of one wakeGap wake the loops once, at its end.
		select {
		case <-d.stopping:
			return
		case <-time.After(wakeGap):
		}
	}
}

// run is one endpoint's loop: claim what is due, as many as there are free
// slots, and attempt each on its own goroutine.
func (d *Dispatcher) run(w *worker) {
	defer d.loops.Done()
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		d.claim(w)
		select {
		case <-d.stopping:
			return
		case <-w.stop:
			return
		case <-tick.C:
		case <-w.wake:
		}
	}
}

func (d *Dispatcher) claim(w *worker) {
	free := cap(w.slots) - len(w.slots)
	if free == 0 || w.gone.Load() {
		return
	}
	n, probe := w.circuit.allowed(free, time.Now())
	if n == 0 {
		return
	}
	ep := w.ep.Load()
	ctx, cancel := context.WithTimeout(d.base, settleTimeout)
	batch, err := d.box.Claim(ctx, ep.Name, n, d.cfg.lease())
	cancel()
	if probe && len(batch) == 0 {
		w.circuit.unused()
	}
	if err != nil {
		d.log.Warn("webhooks: could not read the outbox", zap.String("endpoint", ep.Name), zap.Error(err))
		return
	}
	w.backlog.Store(len(batch) == n)
	for i, dl := range batch {
		select {
		case w.slots <- struct{}{}: // a handoff may have taken a slot meanwhile
			d.attempt(w, dl, probe)
		case <-d.stopping:
			for _, rest := range batch[i:] {
				d.giveBack(rest, "interrupted by shutdown")
			}
			if probe {
				w.circuit.unused()
			}
			return
		}
	}
}

// attempt delivers dl on a goroutine of its own, in the slot it holds;
// probe says it is an open circuit's probe.
func (d *Dispatcher) attempt(w *worker, dl outbox.Delivery, probe bool) {
	d.loops.Add(1)
	go func() {
		defer d.loops.Done()
		delivered := d.deliver(w, dl, probe)
		<-w.slots
		// Under a backlog, look for more at once, but only when half the
		// slots are free, so that a claim takes many deliveries (one
		// statement on postgres) rather than one per finished attempt;
		// and only after a success: the failures of an endpoint going
		// down wait for the next poll, by which time its circuit has
		// counted them all, rather than claim more in the meantime.
		if free := cap(w.slots) - len(w.slots); delivered && w.backlog.Load() && free >= (cap(w.slots)+1)/2 {
			w.wakeUp()
		}
	}()
}
