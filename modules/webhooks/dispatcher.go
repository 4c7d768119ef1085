package webhooks

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/outbox"
)

// settleTimeout bounds recording an attempt's result in the outbox.
const settleTimeout = 5 * time.Second

// Dispatcher sends what the outbox holds to the endpoints of the webhooks
// file. Each endpoint has its own loop and at most --webhooks-concurrency
// attempts in flight, so a slow or dead endpoint holds up no other. A
// create never waits for it: the create only writes the outbox.
//
// Its concerns each have a type and a file: the endpoints of the file and
// their reload (roster, reload.go), claiming what is due (claim.go),
// making and judging attempts (deliver.go, with poster.go's signed POSTs
// and circuit.go's breaker), settling delivered events in batches
// (settler, settle.go), dead letters and replays (deadletters.go), the
// outbox's metrics (stats.go) and the loops' stop (background,
// background.go).
type Dispatcher struct {
	cfg     Config
	box     outbox.Outbox
	poster  *poster
	metrics *Metrics
	log     *zap.Logger
	waker   Waker // nil: the polls alone find new deliveries

	endpoints apiEndpoints // the endpoints made through the API, when they are on (see apiendpoints.go)

	background          // the loops, the attempts' context and the stop
	roster              // the endpoints: their workers and subscriptions
	settled    *settler // delivered events waiting to be settled
}

// Option adjusts a Dispatcher as NewDispatcher builds it.
type Option func(*Dispatcher)

// NewDispatcher returns a dispatcher of box's deliveries to the endpoints
// of file. Start starts its loops.
func NewDispatcher(cfg Config, box outbox.Outbox, file File, metrics *Metrics, tp trace.TracerProvider, log *zap.Logger, opts ...Option) *Dispatcher {
	cfg = cfg.withDefaults()
	d := &Dispatcher{cfg: cfg, box: box, poster: newPoster(cfg, tp), metrics: metrics, log: log, settled: newSettler(box, log)}
	d.background.init()
	d.roster.init(file)
	for _, o := range opts {
		o(d)
	}
	return d
}

// Start drops the pending deliveries of endpoints that are no longer in the
// file and starts a loop per endpoint. Its signature is an Fx start hook's.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if d.endpoints.store != nil {
		version, api, err := d.loadAPI(ctx)
		if err != nil {
			return err
		}
		d.api, d.endpoints.version = api, version
	}
	d.file = d.initial.Endpoints
	all := slices.Concat(d.file, d.api)
	if err := d.drop(ctx, names(all)); err != nil {
		return err
	}
	d.commit(func(*Endpoint) bool { return true })
	if d.endpoints.store != nil {
		d.loops.Add(1)
		go d.watchAPI()
	}
	d.loops.Add(1)
	go d.readStats()
	if d.waker != nil {
		d.loops.Add(1)
		go d.wakeOnChanges()
	}
	d.settled.start()
	return nil
}

// Stop takes no new attempts and lets those in flight finish within ctx;
// those still running then are cut off and stay pending. Its signature is
// an Fx stop hook's.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.stop(ctx)
	d.settled.stop()
	return nil
}
