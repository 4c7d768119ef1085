package webhooks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// moduleApp is Module in an app of its own, over box when it is not nil
// (the memory store has no outbox), with what the others would provide.
func moduleApp(t *testing.T, cfg Config, box outbox.Store, populate ...any) *fx.App {
	t.Helper()
	opts := []fx.Option{
		fx.Supply(cfg, fx.Annotate(prometheus.NewRegistry(), fx.As(new(prometheus.Registerer)))),
		fx.Supply(fx.Annotate(tracenoop.NewTracerProvider(), fx.As(new(trace.TracerProvider)))),
		fx.Supply(zap.NewNop()),
		Module,
		fx.Populate(populate...),
		fx.NopLogger,
	}
	if box != nil {
		opts = append(opts, fx.Supply(fx.Annotate(box, fx.As(new(outbox.Store)))))
	}
	return fx.New(opts...)
}

type adminRoutes struct {
	fx.In
	Routes []httpapi.Route `group:"admin_routes"`
}

// TestModuleOffDoesNothing: without a webhooks file the module starts and
// stops, its Service is off and it serves no route.
func TestModuleOffDoesNothing(t *testing.T) {
	var svc *Service
	var admin adminRoutes
	app := moduleApp(t, Config{}, nil, &svc, &admin)
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if svc == nil || svc.On() || len(admin.Routes) != 0 {
		t.Fatalf("service %+v, %d admin routes; want an off service and none", svc, len(admin.Routes))
	}
}

// TestModuleRefusesAFileWithoutOutbox: a webhooks file on a store without
// an outbox stops the app from being built.
func TestModuleRefusesAFileWithoutOutbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(path, []byte(hooksFile("http://127.0.0.1:1/hook", webhookstest.NewSecret(), "crm")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.File = path
	var svc *Service
	if err := moduleApp(t, cfg, nil, &svc).Err(); !errors.Is(err, ErrNoOutbox) {
		t.Fatalf("app error %v, want ErrNoOutbox", err)
	}
}

// TestModuleOnSendsFromTheStore: with a webhooks file the app's start
// sets the sender going on its own (nothing else asks for it): a plant
// created in the store reaches the endpoint, and the dead letters and the
// replay are served on the admin listener.
func TestModuleOnSendsFromTheStore(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	path := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(path, []byte(hooksFile(r.URL, secret, "crm")), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Start(ctx); err != nil { // before the app, as the store's own hook would
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := testConfig()
	cfg.File = path
	var admin adminRoutes
	app := moduleApp(t, cfg, store.Outbox(), &admin)
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(ctx) })
	if len(admin.Routes) != 3 {
		t.Fatalf("%d admin routes, want the dead letters' 2 and the replay", len(admin.Routes))
	}
	if _, err := store.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "the create's event", func([]webhookstest.Request) bool { return len(r.Delivered()) == 1 })
}
