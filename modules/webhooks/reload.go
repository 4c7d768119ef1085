package webhooks

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// roster is the endpoints of the webhooks file as the dispatcher runs them:
// a worker per endpoint, and which endpoints each kind of change is
// announced to. Start applies the file as read; a reload applies the next
// (Apply).
type roster struct {
	initial File // the file as read at construction, applied by Start

	// applyMu orders a change of the endpoints (and the drop of removed
	// endpoints' pending events) with a redelivery's check that its
	// endpoint is configured: a letter made pending just after its
	// endpoint's removal would be dropped at the next change.
	applyMu    sync.Mutex
	configured []string // every endpoint of the file, under applyMu

	// subscribed names the endpoints each kind of change is announced to;
	// the store's planner (Plan, handoff.go) reads it in every commit
	// that changes plants.
	subscribed atomic.Pointer[subscriptions]

	mu      sync.Mutex
	workers map[string]*worker
	// byName is workers for the creates' hook, which reads it without mu.
	byName atomic.Pointer[map[string]*worker]
}

func (r *roster) init(f File) {
	r.initial = f
	r.configured = names(f)
	r.setSubscribed(f)
	r.workers = make(map[string]*worker)
	r.byName.Store(&map[string]*worker{})
}

func names(f File) []string {
	names := make([]string, 0, len(f.Endpoints))
	for _, ep := range f.Endpoints {
		names = append(names, ep.Name)
	}
	return names
}

// subscriptions names, by kind of change (changes.Kind), the endpoints it
// is announced to, and in some the endpoints of any kind. byKind is sized
// from changes.Kinds, so that a new kind needs nothing here.
type subscriptions struct {
	byKind [][]string
	some   []string
}

// Subscribed names the endpoints that some change is announced to.
func (r *roster) Subscribed() []string { return r.subscribed.Load().some }

// subscribers names the endpoints that a change of kind k is announced to.
func (r *roster) subscribers(k changes.Kind) []string {
	subs := r.subscribed.Load()
	if int(k) >= len(subs.byKind) {
		return nil
	}
	return subs.byKind[k]
}

func (r *roster) setSubscribed(f File) {
	subs := subscriptions{byKind: make([][]string, len(changes.Kinds)+1)}
	for _, ep := range f.Endpoints {
		some := false
		for _, k := range changes.Kinds {
			if ep.Subscribes(k.String()) {
				subs.byKind[k] = append(subs.byKind[k], ep.Name)
				some = true
			}
		}
		if some {
			subs.some = append(subs.some, ep.Name)
		}
	}
	r.subscribed.Store(&subs)
}

// workerNames names the endpoints that have a worker, sorted.
func (r *roster) workerNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.workers))
	for name := range r.workers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Apply makes f the endpoints: new ones get a loop (and the plants created
// from now on, not the backlog), removed ones stop and their pending
// deliveries are dropped, changed ones are sent to as they now read, and
// an endpoint that answered 410 is tried again.
func (d *Dispatcher) Apply(ctx context.Context, f File) {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	d.configured = names(f)
	d.setSubscribed(f)
	d.apply(f)
	if err := d.drop(ctx, f); err != nil {
		d.log.Warn("webhooks: the pending deliveries of removed endpoints were not dropped; they will be at the next start or reload", zap.Error(err))
	}
}

func (d *Dispatcher) apply(f File) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := make(map[string]bool, len(f.Endpoints))
	var added []*worker
	for _, ep := range f.Endpoints {
		keep[ep.Name] = true
		w := d.workers[ep.Name]
		if w == nil {
			w = &worker{slots: make(chan struct{}, d.cfg.Concurrency), wake: make(chan struct{}, 1), stop: make(chan struct{}),
				circuit: newCircuit(d.cfg.Retries[0]), handoff: make(chan outbox.Delivery, d.cfg.Concurrency)}
			d.workers[ep.Name] = w
			added = append(added, w)
		}
		w.ep.Store(&ep)
		w.gone.Store(false)
		w.circuit.reset()
		d.metrics.paused.WithLabelValues(ep.Name).Set(0)
		d.metrics.circuitOpen.WithLabelValues(ep.Name).Set(0)
	}
	for _, w := range added {
		d.loops.Add(2)
		go d.run(w)
		go d.takeHandoffs(w)
	}
	for name, w := range d.workers {
		if !keep[name] {
			close(w.stop)
			delete(d.workers, name)
			d.metrics.paused.DeleteLabelValues(name)
			d.metrics.circuitOpen.DeleteLabelValues(name)
		}
	}
	byName := maps.Clone(d.workers)
	d.byName.Store(&byName)
}

// drop removes the pending deliveries of the endpoints f does not name.
func (d *Dispatcher) drop(ctx context.Context, f File) error {
	dropped, err := d.box.DropExcept(ctx, names(f))
	if err != nil {
		return err
	}
	for ep, n := range dropped {
		d.metrics.dropped.WithLabelValues(ep).Add(float64(n))
		d.log.Warn("webhooks: dropped the pending events of an endpoint no longer in the webhooks file",
			zap.String("endpoint", ep), zap.Int("events", n))
	}
	return nil
}
