// Package webhooks announces the plants' changes to the endpoints of the
// webhooks file: every new plant as the origin document's /plant/webhook,
// and, to an endpoint that asks for envelopes, every create, update and
// delete with its version; signed as Standard Webhooks 1.0 says, retried
// with backoff for about a day, then kept as a dead letter. The event is
// written in the change's own commit (an outbox, see package outbox), so it
// is sent at least once after a crash at any instant; on postgres several
// replicas share the work through leases.
package webhooks

import (
	"crypto/sha256"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/outbox"
)

// Module sends webhooks when --webhooks-file is set, and does nothing
// otherwise: no hook on the store, no goroutine, no route.
var Module = fx.Module("webhooks",
	fx.Provide(New),
	fx.Provide(httpapi.AsAdminRoutes(func(s *Service, log *zap.Logger) []httpapi.Route {
		if !s.On() {
			return nil
		}
		return AdminRoutes(s, log)
	})),
	fx.Provide(httpapi.AsAPIRoutes(APIRoutes)),
	fx.Invoke(Register),
)

// ErrNoOutbox refuses webhooks on the memory store, which has nowhere
// durable to keep events.
var ErrNoOutbox = errors.New("--webhooks-file needs --store bolt or postgres: the memory store keeps no outbox")

// errNoOutboxForAPI is ErrNoOutbox for --webhooks-api.
var errNoOutboxForAPI = errors.New("--webhooks-api needs --store bolt or postgres: the memory store keeps no outbox")

// NoOutboxError is the error that refuses cfg's webhooks on a store that
// keeps no outbox, naming the flag that asked for them.
func NoOutboxError(cfg Config) error {
	if cfg.File == "" {
		return errNoOutboxForAPI
	}
	return ErrNoOutbox
}

// Service is webhooks as the module provides them: the store's outbox, the
// dispatcher that sends what it holds, and the watch of the webhooks file.
// The zero Service is webhooks off (no --webhooks-file): it hooks nothing,
// starts nothing and serves no route.
type Service struct {
	Outbox     outbox.Outbox
	Dispatcher *Dispatcher
	// Endpoints serves the endpoints on the API listener; nil without
	// --webhooks-api.
	Endpoints *EndpointsAPI

	store  outbox.Store // the store's outbox, which Register hooks
	source *Source      // the webhooks file's watch
}

// On reports whether s sends webhooks: whether --webhooks-file or
// --webhooks-api is set.
func (s *Service) On() bool { return s.Dispatcher != nil }

// Params is what New needs: the configuration and the outbox of the store
// the plants module opened (nil for memory, which keeps none).
type Params struct {
	fx.In

	Config Config
	Outbox outbox.Store `optional:"true"`
	// Changes wakes the dispatcher at each change the store commits.
	Changes changes.ChangeLog `optional:"true"`
	// Endpoints keeps the endpoints made through the API.
	Endpoints endpointstore.Store `optional:"true"`
	Registry  prometheus.Registerer
	Tracer    trace.TracerProvider
	Log       *zap.Logger
}

// New reads the webhooks file and builds the service of its endpoints over
// the store's outbox, woken by the store's change log; Register sets it
// going. Without a file it returns the zero Service: webhooks off.
func New(p Params) (*Service, error) {
	cfg := p.Config
	if !cfg.On() {
		return &Service{}, nil
	}
	var file File
	var digest [sha256.Size]byte
	if cfg.File != "" {
		var err error
		if file, digest, err = ReadFile(cfg.File, cfg.AllowHTTP); err != nil {
			return nil, err
		}
	}
	metrics, err := NewMetrics(p.Registry)
	if err != nil {
		return nil, err
	}
	log := p.Log.Named("webhooks")
	box := p.Outbox
	if box == nil {
		return nil, NoOutboxError(cfg)
	}
	var opts []Option
	if p.Changes != nil {
		opts = append(opts, WakeOn(p.Changes))
	}
	if cfg.API {
		if p.Endpoints == nil {
			return nil, NoOutboxError(cfg)
		}
		opts = append(opts, ManagedBy(p.Endpoints))
	}
	d := NewDispatcher(cfg, box, file, metrics, p.Tracer, log, opts...)
	s := &Service{Outbox: box, Dispatcher: d, store: box}
	if cfg.File != "" {
		s.source = NewSource(cfg.File, cfg.AllowHTTP, digest, d, metrics, log)
	}
	if cfg.API {
		s.Endpoints = NewEndpointsAPI(p.Endpoints, d, cfg, log)
	}
	log.Info("webhooks on", zap.Strings("endpoints", d.Subscribed()), zap.Bool("api", cfg.API))
	return s, nil
}

// Register sets s going when it is on: it hooks the store so that every
// change writes its events, and schedules the dispatcher and the file's
// watch to start after the store (postgres migrations included; the store
// appended its hooks when it was built, before s) and to stop before it.
func Register(lc fx.Lifecycle, s *Service) {
	if !s.On() {
		return
	}
	Hook(s.store, s.Dispatcher)
	lc.Append(fx.Hook{OnStart: s.Dispatcher.Start, OnStop: s.Dispatcher.Stop})
	if s.source != nil {
		lc.Append(fx.Hook{OnStart: s.source.Start, OnStop: s.source.Stop})
	}
}
