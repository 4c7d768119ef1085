package plants

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// moduleView is the plants module run alone, with what the other modules
// would provide, and hands back what a later module (webhooks) would see.
type moduleView struct {
	fx.In

	Store   plant.Store
	Outbox  outbox.Store
	Changes changes.ChangeLog
	Routes  []httpapi.Route `group:"api_routes"`
}

func startModule(t *testing.T, cfg Config) (moduleView, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	var view moduleView
	app := fx.New(
		fx.Supply(cfg, zap.NewNop(), fx.Annotate(reg, fx.As(new(prometheus.Registerer)))),
		fx.Provide(func() trace.TracerProvider { return tracenoop.NewTracerProvider() }),
		Module,
		fx.Populate(&view),
		fx.NopLogger,
	)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
	return view, reg
}

// The chosen store's faces reach other modules as they are: its
// plant.Store, its outbox and its change log.
func TestModuleProvidesTheChosenStoresFace(t *testing.T) {
	bolt, _ := startModule(t, Config{Store: StoreBolt, Bolt: boltstore.Config{DataDir: t.TempDir()}, MaxBodyBytes: DefaultMaxBodyBytes})
	boltStore, ok := bolt.Store.(*boltstore.Store)
	if !ok {
		t.Fatalf("bolt: the plant.Store seen outside the module is %T, not the bolt store itself", bolt.Store)
	}
	if box, ok := bolt.Outbox.(*boltstore.Outbox); !ok || box != boltStore.Outbox() {
		t.Fatalf("bolt: the outbox seen outside the module is %T, want the bolt store's", bolt.Outbox)
	}
	if log, ok := bolt.Changes.(*boltstore.ChangeLog); !ok || log != boltStore.Changes() {
		t.Fatalf("bolt: the change log seen outside the module is %T, want the bolt store's", bolt.Changes)
	}
	mem, _ := startModule(t, Config{Store: StoreMemory, MaxBodyBytes: DefaultMaxBodyBytes})
	if mem.Outbox != nil {
		t.Fatalf("memory: Outbox %v; want nil", mem.Outbox)
	}
	if _, ok := mem.Store.(*memstore.Store); !ok {
		t.Fatalf("memory: plant.Store outside the module is %T, want *memstore.Store", mem.Store)
	}
	if log, ok := mem.Changes.(*memstore.Store); !ok || plant.Store(log) != mem.Store {
		t.Fatalf("memory: the change log outside the module is %T, want the memory store's", mem.Changes)
	}
}

// What only the plants module uses stays in it: the concrete stores, the
// opened store, the handlers, the feed and the importer are not in the app's graph.
func TestModuleKeepsItsOwnTypesPrivate(t *testing.T) {
	populate := func(target any) error {
		return fx.New(
			fx.Supply(Config{Store: StoreMemory, MaxBodyBytes: DefaultMaxBodyBytes}, zap.NewNop(), fx.Annotate(prometheus.NewRegistry(), fx.As(new(prometheus.Registerer)))),
			fx.Provide(func() trace.TracerProvider { return tracenoop.NewTracerProvider() }),
			Module,
			fx.Populate(target),
			fx.NopLogger,
		).Err()
	}
	for _, target := range []any{new(plant.Store), new(outbox.Store), new(changes.ChangeLog)} {
		if err := populate(target); err != nil {
			t.Errorf("%T does not reach the app: %v", target, err)
		}
	}
	for _, target := range []any{new(*boltstore.Store), new(*pgstore.Store), new(*openedStore), new(*Handlers), new(*Feed), new(*Importer)} {
		if populate(target) == nil {
			t.Errorf("%T reaches the app outside the plants module", target)
		}
	}
}

// The chosen store's own metrics are on the registry: bolt's group commit
// figures with the bolt store, none of them with another.
func TestModuleExportsTheBoltStoresMetrics(t *testing.T) {
	names := []string{"plantstore_bolt_commits_total", "plantstore_bolt_writes_committed_total"}
	view, reg := startModule(t, Config{Store: StoreBolt, Bolt: boltstore.Config{DataDir: t.TempDir()}, MaxBodyBytes: DefaultMaxBodyBytes})
	if _, err := view.Store.Create(context.Background(), plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	got := gatherValues(t, reg)
	for _, name := range names {
		if v, ok := got[name]; !ok || v != 1 {
			t.Errorf("bolt: %s = %v (present %v), want 1 after one create", name, v, ok)
		}
	}
	_, reg = startModule(t, Config{Store: StoreMemory, MaxBodyBytes: DefaultMaxBodyBytes})
	got = gatherValues(t, reg)
	for _, name := range names {
		if _, ok := got[name]; ok {
			t.Errorf("memory: %s is exported", name)
		}
	}
}

// Inside the module the store is instrumented: a create through the route
// is timed under the store's name.
func TestModuleInstrumentsTheHandlersStore(t *testing.T) {
	view, reg := startModule(t, Config{Store: StoreMemory, MaxBodyBytes: DefaultMaxBodyBytes})
	var create http.Handler
	for _, rt := range view.Routes {
		if rt.Method == http.MethodPost && rt.Path == "/plants" {
			create = rt.Handler
		}
	}
	if create == nil {
		t.Fatal("no POST /plants route")
	}
	req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(`{"id":1,"name":"Monstera"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	create.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	got := histogramCount(t, reg, "memory", "create", resultOK)
	if got != 1 {
		t.Fatalf("store create observations: %d, want 1", got)
	}
}

// Inside the module the change log is instrumented too: a page of the feed
// through its route is a "changes" read, a listing's head a
// "changes_head" one, both under the store's name; the change log seen
// outside the module stays the store's own (see above).
func TestModuleInstrumentsTheFeedsChangeLog(t *testing.T) {
	view, reg := startModule(t, Config{Store: StoreMemory, MaxBodyBytes: DefaultMaxBodyBytes})
	routes := map[string]http.Handler{}
	for _, rt := range view.Routes {
		routes[rt.Method+" "+rt.Path] = rt.Handler
	}
	for _, target := range []string{"/plants/changes", "/plants"} {
		h := routes[http.MethodGet+" "+target]
		if h == nil {
			t.Fatalf("no GET %s route", target)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
		}
	}
	for _, op := range []string{"changes", "changes_head"} {
		if got := histogramCount(t, reg, "memory", op, resultOK); got != 1 {
			t.Errorf("store %s observations: %d, want 1", op, got)
		}
	}
}

// histogramCount is the number of observations of one store operation.
func histogramCount(t *testing.T, reg *prometheus.Registry, store, op, result string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "plantstore_store_operation_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["store"] == store && labels["operation"] == op && labels["result"] == result {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}
