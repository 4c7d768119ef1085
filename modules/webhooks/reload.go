package webhooks

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// roster is the endpoints as the dispatcher runs them, those of the
// webhooks file and those made through the API: a worker per endpoint,
// and which endpoints each kind of change is announced to. Start applies
// the file as read and the API's as stored; a reload of the file applies
// the next file (Apply), a change of the API's endpoints their new list
// (applyAPI), each leaving the other's endpoints as they are.
type roster struct {
	initial File // the file as read at construction, applied by Start

	// applyMu orders a change of the endpoints (and the drop of removed
	// endpoints' pending events) with a redelivery's check that its
	// endpoint is configured: a letter made pending just after its
	// endpoint's removal would be dropped at the next change.
	applyMu    sync.Mutex
	file       []Endpoint // the file's endpoints, under applyMu
	api        []Endpoint // the API's endpoints, under applyMu
	configured []string   // every endpoint's name, under applyMu

	// listed is the file's and the API's endpoints for the API's
	// listing, which reads it without applyMu.
	listed atomic.Pointer[[]Endpoint]

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
	r.file = f.Endpoints
	r.configured = names(f.Endpoints)
	r.listed.Store(&f.Endpoints)
	r.setSubscribed(f.Endpoints)
	r.workers = make(map[string]*worker)
	r.byName.Store(&map[string]*worker{})
}

func names(eps []Endpoint) []string {
	names := make([]string, 0, len(eps))
	for _, ep := range eps {
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

// setSubscribed announces changes to eps. A disabled endpoint stays
// subscribed: its events wait, for when it is enabled again.
func (r *roster) setSubscribed(eps []Endpoint) {
	subs := subscriptions{byKind: make([][]string, len(changes.Kinds)+1)}
	for _, ep := range eps {
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

// Apply makes f the file's endpoints: new ones get a loop (and the plants
// created from now on, not the backlog), removed ones stop and their
// pending deliveries are dropped, changed ones are sent to as they now
// read, and an endpoint that answered 410 is tried again. The API's
// endpoints are left as they are, their pending deliveries too.
func (d *Dispatcher) Apply(ctx context.Context, f File) {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	d.file = f.Endpoints
	d.commit(func(ep *Endpoint) bool { return !ep.API })
	keep := slices.Clone(d.configured)
	if stats, err := d.box.Stats(ctx); err == nil {
		for name := range stats {
			if strings.HasPrefix(name, apiIDPrefix) { // another replica's endpoint this one has not read yet
				keep = append(keep, name)
			}
		}
	} else {
		d.log.Warn("webhooks: the pending deliveries of removed endpoints were not dropped; they will be at the next start or reload", zap.Error(err))
		return
	}
	if err := d.drop(ctx, keep); err != nil {
		d.log.Warn("webhooks: the pending deliveries of removed endpoints were not dropped; they will be at the next start or reload", zap.Error(err))
	}
}

// commit runs the file's and the API's endpoints as they now are; reset
// says which of them start afresh: a 410's pause and the circuit
// forgotten, a disabled endpoint paused.
func (d *Dispatcher) commit(reset func(*Endpoint) bool) {
	all := slices.Concat(d.file, d.api)
	d.configured = names(all)
	d.listed.Store(&all)
	d.setSubscribed(all)
	d.apply(all, reset)
}

func (d *Dispatcher) apply(eps []Endpoint, reset func(*Endpoint) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := make(map[string]bool, len(eps))
	var added []*worker
	for _, ep := range eps {
		keep[ep.Name] = true
		w := d.workers[ep.Name]
		fresh := w == nil
		if fresh {
			w = &worker{slots: make(chan struct{}, d.cfg.Concurrency), wake: make(chan struct{}, 1), stop: make(chan struct{}),
				circuit: newCircuit(d.cfg.Retries[0]), handoff: make(chan outbox.Delivery, d.cfg.Concurrency)}
			d.workers[ep.Name] = w
			added = append(added, w)
		}
		w.ep.Store(&ep)
		if fresh || reset(&ep) {
			w.gone.Store(ep.Disabled)
			w.failingSince.Store(0)
			w.circuit.reset()
			d.metrics.paused.WithLabelValues(ep.Name).Set(boolGauge(ep.Disabled))
			d.metrics.circuitOpen.WithLabelValues(ep.Name).Set(0)
			if !ep.Disabled {
				w.wakeUp() // enabled again: what waited is due
			}
		}
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

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// drop removes the pending deliveries of the endpoints keep does not name.
func (d *Dispatcher) drop(ctx context.Context, keep []string) error {
	dropped, err := d.box.DropExcept(ctx, keep)
	if err != nil {
		return err
	}
	for ep, n := range dropped {
		d.metrics.dropped.WithLabelValues(ep).Add(float64(n))
		d.log.Warn("webhooks: dropped the pending events of a removed endpoint",
			zap.String("endpoint", ep), zap.Int("events", n))
	}
	return nil
}
