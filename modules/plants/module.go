// Package plants serves the Plant Store API: it decodes and validates
// requests, calls the plant.Store chosen by configuration, and answers in
// the contract's shapes. The domain types live in plants/plant and each
// store in its own package.
package plants

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// defaultChangesRetention is --changes-retention's default: three days, a
// long weekend of a follower or a webhook receiver being down.
const defaultChangesRetention = 72 * time.Hour

// minChangesRetention is the shortest --changes-retention accepted: a
// follower must have time to read a change before it is pruned.
const minChangesRetention = time.Minute

// Module opens the configured store (see storeKinds) and contributes the API
// routes and the store's readiness check. Inside the module the
// plant.Store and the change log are the instrumented ones (fx.Decorate),
// so the handlers, the feed and the readiness check are timed and traced.
// Outside it the app sees only the store's faces other modules consume
// (storeFacesResult); the concrete store, the handlers, the feed and the
// importer stay private to the module.
var Module = fx.Module("plants",
	fx.Decorate(func(cfg Config, store plant.Store, metrics *StoreMetrics, tp trace.TracerProvider) plant.Store {
		return metrics.Instrument(store, cfg.Store, tp)
	}),
	fx.Decorate(func(cfg Config, log changes.ChangeLog, metrics *StoreMetrics, tp trace.TracerProvider) changes.ChangeLog {
		if log == nil {
			return nil
		}
		return metrics.InstrumentChanges(log, cfg.Store, tp)
	}),
	fx.Provide(fx.Private, openStore, newHandlersFromApp, newFeedFromApp, newImporterFromApp),
	fx.Provide(
		NewStoreMetrics,
		storeFaces,
		httpapi.AsAPIRoutes((*Handlers).Routes),
		httpapi.AsAPIRoutes((*Feed).Routes),
		httpapi.AsAPIRoutes((*Importer).Routes),
		httpapi.AsReadinessCheck(func(store plant.Store) httpapi.ReadinessCheck {
			return httpapi.ReadinessCheck{Name: "store", Check: store.Ping}
		}),
	),
	fx.Invoke(func(reg prometheus.Registerer, o *openedStore) error { return o.RegisterMetrics(reg) }),
)

// handlersParams is what the API handlers are built from: the store, and its
// change log for the listings' cursor (nil only where a store keeps none
// yet).
type handlersParams struct {
	fx.In

	Config   Config
	Store    plant.Store
	Changes  changes.ChangeLog
	Registry prometheus.Registerer
	Log      *zap.Logger
}

func newHandlersFromApp(in handlersParams) (*Handlers, error) {
	return NewHandlers(in.Store, in.Changes, in.Config.MaxBodyBytes, in.Registry, in.Log)
}

// feedParams is what the change feed is built from: the store's change log
// and Stopping, which comes from the http module (it ends the feed's long
// answers at shutdown); the plants module run alone, in its tests, has
// none.
type feedParams struct {
	fx.In

	Changes  changes.ChangeLog
	Stopping httpapi.Stopping `optional:"true"`
	Log      *zap.Logger
}

func newFeedFromApp(p feedParams) *Feed {
	return NewFeed(p.Changes, p.Stopping, p.Log)
}

// storeFacesResult is the store's faces the app sees: the plant.Store (the
// instrumented one inside this module), its outbox (nil for a store that
// keeps none: webhooks need one) and its change log (the feed, and what
// wakes the webhooks' dispatcher).
type storeFacesResult struct {
	fx.Out

	Store   plant.Store
	Outbox  outbox.Store
	Changes changes.ChangeLog
	// Endpoints keeps the webhook endpoints made through the API.
	Endpoints endpointstore.Store
}

func storeFaces(o *openedStore) storeFacesResult {
	return storeFacesResult{Store: o.Store, Outbox: o.Outbox, Changes: o.Changes, Endpoints: o.Endpoints}
}

// openStore opens the store cfg names (openConfigured). Opening only builds; the
// store's goroutines start in its OnStart hook (after postgres's
// migrations), and it closes when the app stops, after the listeners have
// drained.
func openStore(cfg Config, lc fx.Lifecycle, tp trace.TracerProvider) (*openedStore, error) {
	o, err := openConfigured(cfg, tp)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{OnStart: o.Start, OnStop: func(context.Context) error { return o.Close() }})
	return o, nil
}
