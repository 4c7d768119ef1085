// Package plants serves the Plant Store API: it decodes and validates
// requests, calls the plant.Store chosen by configuration, and answers in
// the contract's shapes. The domain types live in plants/plant and each
// store in its own package.
package plants

import (
	"context"
	"fmt"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/http/httpapi"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Config is the plants part of the program's configuration. Each store
// owns its own part (and its flags); only the chosen store's is used.
type Config struct {
	Store        string // memory, bolt or postgres
	MaxBodyBytes int64
	// MaxImportBytes caps one stream of the bulk create (POST /plants:import).
	MaxImportBytes int64
	// ChangesRetention is how long every store keeps a change in its log,
	// and a delivered webhook event for a replay; zero keeps them for
	// ever, on every store (the flag's default is DefaultChangesRetention).
	ChangesRetention time.Duration

	Bolt     boltstore.Config
	Postgres pgstore.Config // Tracer is set by OpenStore
}

// DefaultChangesRetention is --changes-retention's default: three days, a
// long weekend of a follower or a webhook receiver being down.
const DefaultChangesRetention = 72 * time.Hour

// MinChangesRetention is the shortest --changes-retention accepted: a
// follower must have time to read a change before it is pruned.
const MinChangesRetention = time.Minute

// Store names accepted by Config.Store.
const (
	StoreMemory   = "memory"
	StoreBolt     = "bolt"
	StorePostgres = "postgres"
)

// Module provides the configured store and contributes the API routes and
// the store's readiness check. Inside the module the plant.Store and the
// change log are the instrumented ones (fx.Decorate), so the handlers, the
// feed and the readiness check are timed and traced; the concrete store's
// other faces are provided as they are (see Stores).
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
	fx.Provide(
		NewStoreMetrics,
		OpenStore,
		newHandlersFromApp,
		httpapi.AsAPIRoutes((*Handlers).Routes),
		httpapi.AsAPIRoutes((*Feed).Routes),
		newImporterFromApp,
		httpapi.AsAPIRoutes((*Importer).Routes),
		httpapi.AsReadinessCheck(func(store plant.Store) httpapi.ReadinessCheck {
			return httpapi.ReadinessCheck{Name: "store", Check: store.Ping}
		}),
	),
	fx.Provide(fx.Private, newFeedFromApp),
	fx.Invoke(RegisterPostgresMetrics, RegisterBoltMetrics),
)

// handlersIn is what the API handlers are built from: the store, and its
// change log for the listings' cursor (nil only where a store keeps none
// yet).
type handlersIn struct {
	fx.In

	Config   Config
	Store    plant.Store
	Changes  changes.ChangeLog
	Registry prometheus.Registerer
	Log      *zap.Logger
}

func newHandlersFromApp(in handlersIn) (*Handlers, error) {
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

// Stores is what OpenStore provides: the plant.Store every consumer uses,
// the store's outbox (nil for memory, which keeps none), its change log
// (every store keeps one), and the chosen store's concrete type for what
// only that store can do (its metrics, say). Exactly one of Bolt and
// Postgres is set when that store is chosen; the other is nil, as both are
// with the memory store.
type Stores struct {
	fx.Out

	Store    plant.Store
	Outbox   outbox.Store
	Changes  changes.ChangeLog
	Bolt     *boltstore.Store
	Postgres *pgstore.Store
}

// OpenStore opens the store cfg names. The constructors only build; the
// store's goroutines start in its OnStart hook (after postgres's
// migrations), and it closes when the app stops, after the listeners have
// drained. The module instruments the plant.Store (metrics, child spans).
func OpenStore(cfg Config, lc fx.Lifecycle, tp trace.TracerProvider) (Stores, error) {
	var out Stores
	retention := cfg.ChangesRetention
	switch cfg.Store {
	case StoreMemory:
		s := memstore.NewWithOptions(memstore.Options{ChangesRetention: retention})
		lc.Append(fx.StartHook(s.Start)) // the change log's pruner
		out.Store, out.Changes = s, s
	case StoreBolt:
		boltCfg := cfg.Bolt
		boltCfg.ChangesRetention = retention
		s, err := boltstore.OpenConfig(boltCfg)
		if err != nil {
			return Stores{}, err
		}
		lc.Append(fx.StartHook(s.Start)) // the group committer's goroutine, and the pruner's
		out.Store, out.Bolt, out.Outbox, out.Changes = s, s, s.Outbox(), s.Changes()
	case StorePostgres:
		pgCfg := cfg.Postgres
		pgCfg.Tracer = postgresTracer(tp)
		pgCfg.ChangesRetention = retention
		pg, err := pgstore.New(pgCfg)
		if err != nil {
			return Stores{}, err
		}
		// Migrating is the first contact with the database: an unreachable
		// one fails the start (exit 2) once the connect timeout has passed,
		// and the orchestrator restarts the process.
		lc.Append(fx.StartHook(pg.Migrate))
		lc.Append(fx.StartHook(pg.Start)) // the create lanes, the change log's listener and pruner
		out.Store, out.Postgres, out.Outbox, out.Changes = pg, pg, pg.Outbox(), pg
	default:
		return Stores{}, fmt.Errorf("store %q is not available in this build", cfg.Store)
	}
	store := out.Store
	lc.Append(fx.StopHook(func(context.Context) error { return store.Close() }))
	return out, nil
}

// postgresTracer makes each PostgreSQL statement a span under the store
// call's (only inside a traced request: otelpgx starts none without a
// recording parent). Its metrics would duplicate the store histogram, so
// they go to a no-op meter. Statements carry their SQL, which has
// placeholders, never the values.
func postgresTracer(tp trace.TracerProvider) pgx.QueryTracer {
	return otelpgx.NewTracer(otelpgx.WithTracerProvider(tp), otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()))
}
