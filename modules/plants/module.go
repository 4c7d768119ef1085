// Package plants serves the Plant Store API: it decodes and validates
// requests, calls the plant.Store chosen by configuration, and answers in
// the contract's shapes. The domain types live in plants/plant and each
// store in its own package.
package plants

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	httpserver "github.com/plantstore/plantstore/modules/http"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Config is the plants part of the program's configuration.
type Config struct {
	Store        string // memory, bolt or postgres
	DataDir      string // bolt keeps plants.db here
	PostgresURL  string
	MaxBodyBytes int64
}

// Store names accepted by Config.Store.
const (
	StoreMemory   = "memory"
	StoreBolt     = "bolt"
	StorePostgres = "postgres"
)

// Module provides the configured store and contributes the API routes and
// the store's readiness check.
var Module = fx.Module("plants",
	fx.Provide(
		OpenStore,
		func(cfg Config, store plant.Store, reg prometheus.Registerer, log *zap.Logger) (*Handlers, error) {
			return NewHandlers(store, cfg.MaxBodyBytes, reg, log)
		},
		httpserver.AsAPIRoutes((*Handlers).Routes),
		httpserver.AsReadinessCheck(func(store plant.Store) httpserver.ReadinessCheck {
			return httpserver.ReadinessCheck{Name: "store", Check: store.Ping}
		}),
	),
)

// OpenStore opens the store cfg names and closes it when the app stops,
// after the listeners have drained.
func OpenStore(cfg Config, lc fx.Lifecycle) (plant.Store, error) {
	var store plant.Store
	switch cfg.Store {
	case StoreMemory:
		store = memstore.New()
	default:
		return nil, fmt.Errorf("store %q is not available in this build", cfg.Store)
	}
	lc.Append(fx.StopHook(func(context.Context) error { return store.Close() }))
	return store, nil
}
