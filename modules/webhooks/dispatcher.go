package webhooks

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// statsInterval is how often the outbox's size and oldest age are read for
// the metrics.
const statsInterval = 5 * time.Second

// settleTimeout bounds recording an attempt's result in the outbox.
const settleTimeout = 5 * time.Second

// wakeGap is the least time between two wakes by the store's changes: a
// change is claimed at once, and a burst of them by one claim per endpoint
// at most every wakeGap.
const wakeGap = 20 * time.Millisecond

// Delivered events are settled in batches: at most every settleInterval,
// or at once when maxSettleBatch are waiting. One write for many keeps a
// busy sender from costing a commit (and on postgres a WAL flush) per
// event; an event whose settling a crash prevents is sent again, which
// at-least-once allows.
const (
	settleInterval = 50 * time.Millisecond
	maxSettleBatch = 256
)

// Dispatcher sends what the outbox holds to the endpoints of the webhooks
// file. Each endpoint has its own loop and at most --webhooks-concurrency
// attempts in flight, so a slow or dead endpoint holds up no other. A
// create never waits for it: the create only writes the outbox.
type Dispatcher struct {
	cfg     Config
	box     outbox.Outbox
	send    *sender
	metrics *Metrics
	log     *zap.Logger

	// subscribed names the endpoints each kind of change is announced to;
	// the store's planner (Plan, handoff.go) reads it in every commit
	// that changes plants.
	subscribed atomic.Pointer[subscriptions]

	initial File // the file as read at construction, applied by Start

	// applyMu orders a change of the endpoints (and the drop of removed
	// endpoints' pending events) with a redelivery's check that its
	// endpoint is configured: a letter made pending just after its
	// endpoint's removal would be dropped at the next change.
	applyMu    sync.Mutex
	configured []string // every endpoint of the file, under applyMu

	mu      sync.Mutex
	workers map[string]*worker
	// byName is workers for the creates' hook, which reads it without mu.
	byName atomic.Pointer[map[string]*worker]

	// base is every attempt's context: cancelled once the stop's budget is
	// spent, so that an attempt in flight ends and stays pending.
	base     context.Context
	cancel   context.CancelFunc
	stopping chan struct{}
	stopOnce sync.Once
	loops    sync.WaitGroup

	deliveredMu sync.Mutex
	delivered   []outbox.Delivery // to settle as delivered in the outbox
	settleNow   chan struct{}     // a full batch is waiting
	lastSettle  chan struct{}     // closed once the loops are done: settle the rest and stop
	settlerDone chan struct{}
	started     bool // Start ran: the settler is running

	waker Waker // nil: the polls alone find new deliveries
}

// Option adjusts a Dispatcher as NewDispatcher builds it.
type Option func(*Dispatcher)

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
	ep      atomic.Pointer[Endpoint]
	gone    atomic.Bool   // it answered 410: nothing is sent until the file changes
	circuit *circuit      // open while it is down: see circuit.go
	slots   chan struct{} // attempts in flight
	wake    chan struct{} // a slot freed up, a change was committed, a replay: look for more now
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

// NewDispatcher returns a dispatcher of box's deliveries to the endpoints
// of file. Start starts its loops.
func NewDispatcher(cfg Config, box outbox.Outbox, file File, metrics *Metrics, tp trace.TracerProvider, log *zap.Logger, opts ...Option) *Dispatcher {
	cfg = cfg.withDefaults()
	base, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{cfg: cfg, box: box, send: newSender(cfg, tp), metrics: metrics, log: log,
		workers: make(map[string]*worker), base: base, cancel: cancel, stopping: make(chan struct{}),
		settleNow: make(chan struct{}, 1), lastSettle: make(chan struct{}), settlerDone: make(chan struct{})}
	d.setSubscribed(file)
	d.byName.Store(&map[string]*worker{})
	d.initial = file
	d.configured = names(file)
	for _, o := range opts {
		o(d)
	}
	return d
}

func names(f File) []string {
	names := make([]string, 0, len(f.Endpoints))
	for _, ep := range f.Endpoints {
		names = append(names, ep.Name)
	}
	return names
}

// Redeliver makes the dead letter id due again, if its endpoint is in the
// file: see outbox.Outbox's Redeliver.
func (d *Dispatcher) Redeliver(ctx context.Context, id string) error {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	return d.box.Redeliver(ctx, id, d.configured)
}

// Replay makes endpoint's delivered events committed at or after since due
// again, at most limit of them (see outbox.Outbox's Replay), if endpoint is
// in the file (else a *outbox.NotConfiguredError: pending, they would be
// dropped as a removed endpoint's events), and has its worker claim them
// at once.
func (d *Dispatcher) Replay(ctx context.Context, endpoint string, since time.Time, limit int) (int, error) {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if !slices.Contains(d.configured, endpoint) {
		return 0, &outbox.NotConfiguredError{Endpoint: endpoint}
	}
	n, err := d.box.Replay(ctx, endpoint, since, limit)
	if w := (*d.byName.Load())[endpoint]; n > 0 && w != nil {
		w.wakeUp()
	}
	return n, err
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

// subscriptions names, by kind of change (changes.Kind), the endpoints it
// is announced to, and in some the endpoints of any kind.
type subscriptions struct {
	byKind [changes.Deleted + 1][]string
	some   []string
}

// Subscribed names the endpoints that some change is announced to.
func (d *Dispatcher) Subscribed() []string { return d.subscribed.Load().some }

// subscribers names the endpoints that a change of kind k is announced to.
func (d *Dispatcher) subscribers(k changes.Kind) []string {
	subs := d.subscribed.Load()
	if int(k) >= len(subs.byKind) {
		return nil
	}
	return subs.byKind[k]
}

func (d *Dispatcher) setSubscribed(f File) {
	var subs subscriptions
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
	d.subscribed.Store(&subs)
}

// Start drops the pending deliveries of endpoints that are no longer in the
// file and starts a loop per endpoint. Its signature is an Fx start hook's.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	f := d.initial
	if err := d.drop(ctx, f); err != nil {
		return err
	}
	d.apply(f)
	d.loops.Add(1)
	go d.readStats()
	if d.waker != nil {
		d.loops.Add(1)
		go d.wakeOnChanges()
	}
	d.started = true
	go d.settleDelivered()
	return nil
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
		d.deliver(w, dl, probe)
		<-w.slots
		// Under a backlog, look for more at once, but only when half the
		// slots are free, so that a claim takes many deliveries (one
		// statement on postgres) rather than one per finished attempt.
		if free := cap(w.slots) - len(w.slots); w.backlog.Load() && free >= (cap(w.slots)+1)/2 {
			w.wakeUp()
		}
	}()
}

// deliver makes one attempt and records its result.
func (d *Dispatcher) deliver(w *worker, dl outbox.Delivery, probe bool) {
	ep := *w.ep.Load()
	r := d.send.attempt(d.base, ep, dl)
	d.metrics.attempts.WithLabelValues(ep.Name, r.outcome, statusClass(r.status)).Inc()
	d.judge(w, ep.Name, r, probe)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.base), settleTimeout)
	defer cancel()
	log := func() *zap.Logger { // only a failure logs: no logger is built for a success
		return d.log.With(zap.String("endpoint", ep.Name), zap.String("webhook_id", dl.ID), zap.Int("attempt", dl.Attempt))
	}
	var err error
	switch {
	case r.outcome == outcomeDelivered:
		d.metrics.latency.WithLabelValues(ep.Name).Observe(time.Since(dl.CreatedAt).Seconds())
		d.settleLater(dl)
	case d.base.Err() != nil:
		// Cut off by the stop: not the endpoint's failure. Due again at
		// once, for another replica or the next start.
		err = d.box.Retry(ctx, dl, 0, "interrupted by shutdown")
	case dl.Attempt > len(d.cfg.Retries):
		err = d.box.Bury(ctx, dl, r.reason)
		d.metrics.deadLettered.WithLabelValues(ep.Name).Inc()
		log().Warn("webhook dead-lettered after its last attempt", zap.String("outcome", r.outcome),
			zap.Int("status", r.status), zap.String("reason", r.reason))
	default:
		if r.outcome == outcomeGone && !w.gone.Swap(true) {
			d.metrics.paused.WithLabelValues(ep.Name).Set(1)
			log().Warn("webhook endpoint answered 410 Gone: nothing more is sent to it until the webhooks file changes")
		}
		wait := d.backoff(dl.Attempt, r.retryAfter)
		err = d.box.Retry(ctx, dl, wait, r.reason)
		log().Warn("webhook attempt failed", zap.String("outcome", r.outcome), zap.Int("status", r.status),
			zap.String("reason", r.reason), zap.Duration("retry_in", wait))
	}
	if err != nil {
		log().Warn("webhooks: could not record an attempt's result in the outbox; it will be attempted again", zap.Error(err))
	}
}

// judge tells w's circuit how an attempt went.
func (d *Dispatcher) judge(w *worker, endpoint string, r attemptResult, probe bool) {
	switch {
	case r.outcome == outcomeDelivered:
		if w.circuit.succeeded() {
			d.metrics.circuitOpen.WithLabelValues(endpoint).Set(0)
			d.log.Info("webhook endpoint answers again: attempts resume", zap.String("endpoint", endpoint))
			w.backlog.Store(true) // what waited is due: claim it as slots free up
		}
	case d.base.Err() != nil, r.outcome == outcomeGone:
		// No verdict: cut off by the stop, or paused by its own 410.
		if probe {
			w.circuit.unused()
		}
	default:
		if wait := w.circuit.failed(probe, time.Now()); wait > 0 {
			d.metrics.circuitOpen.WithLabelValues(endpoint).Set(1)
			d.log.Warn("webhook endpoint failing: no attempts to it until a probe succeeds; its events wait in the outbox",
				zap.String("endpoint", endpoint), zap.Duration("next_probe_in", wait))
		}
	}
}

// settleLater queues a delivered event to be settled in the outbox.
func (d *Dispatcher) settleLater(dl outbox.Delivery) {
	d.deliveredMu.Lock()
	d.delivered = append(d.delivered, dl)
	full := len(d.delivered) >= maxSettleBatch
	d.deliveredMu.Unlock()
	if full {
		select {
		case d.settleNow <- struct{}{}:
		default:
		}
	}
}

// settleDelivered settles delivered events in the outbox in batches until
// the stop, then settles the rest.
func (d *Dispatcher) settleDelivered() {
	defer close(d.settlerDone)
	tick := time.NewTicker(settleInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-d.settleNow:
		case <-d.lastSettle:
			d.settle()
			return
		}
		d.settle()
	}
}

func (d *Dispatcher) settle() {
	d.deliveredMu.Lock()
	batch := d.delivered
	d.delivered = nil
	d.deliveredMu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := d.box.Delivered(ctx, batch); err != nil {
		d.log.Warn("webhooks: could not settle delivered events in the outbox; they will be sent again",
			zap.Int("events", len(batch)), zap.Error(err))
	}
}

// backoff is the wait after failed attempt n (from 1): the schedule's,
// spread by ±20% so that the events of one outage do not all come back at
// once, and never shorter than the receiver's Retry-After.
func (d *Dispatcher) backoff(n int, retryAfter time.Duration) time.Duration {
	wait := d.cfg.Retries[min(n, len(d.cfg.Retries))-1]
	wait = time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64())) //nolint:gosec // jitter spreads retries; nothing to guess
	return max(wait, retryAfter)
}

// readStats refreshes the outbox metrics until the stop.
func (d *Dispatcher) readStats() {
	defer d.loops.Done()
	tick := time.NewTicker(statsInterval)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(d.base, settleTimeout)
		stats, err := d.box.Stats(ctx)
		cancel()
		if err == nil {
			for _, name := range d.names() {
				if _, ok := stats[name]; !ok {
					stats[name] = outbox.Stats{}
				}
			}
			d.metrics.outbox.set(stats, time.Now())
		}
		select {
		case <-d.stopping:
			return
		case <-tick.C:
		}
	}
}

func (d *Dispatcher) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.workers))
	for name := range d.workers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Stop takes no new attempts and lets those in flight finish within ctx;
// those still running then are cut off and stay pending. Its signature is
// an Fx stop hook's.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() { close(d.stopping) })
	done := make(chan struct{})
	go func() { d.loops.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		d.cancel()
		<-done
	}
	d.cancel()
	d.stopSettling()
	return nil
}

// stopSettling settles what was delivered last and ends the settler; a
// dispatcher that never started has none.
func (d *Dispatcher) stopSettling() {
	select {
	case <-d.lastSettle:
		return // stopped before
	default:
	}
	close(d.lastSettle)
	if d.started {
		<-d.settlerDone
	}
}
