package plants

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
)

// TestKindsSayWhatTheStoresDo: each kind's declared outbox and change log
// are what its opened store has, and its figures register apart from
// another's. Postgres is built without connecting (openConfigured only builds).
func TestKindsSayWhatTheStoresDo(t *testing.T) {
	cfg := Config{
		Bolt:     boltstore.Config{DataDir: t.TempDir()},
		Postgres: pgstore.Config{URL: "postgres://nobody@127.0.0.1:1/none"},
	}
	var names []string
	for _, k := range storeKinds {
		names = append(names, k.Name)
		cfg.Store = k.Name
		o, err := openConfigured(cfg, tracenoop.NewTracerProvider())
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if o.Kind.Name != k.Name || o.Store == nil {
			t.Errorf("%s: opened kind %q, store %v", k.Name, o.Kind.Name, o.Store)
		}
		if (o.Outbox != nil) != k.Outbox || (o.Changes != nil) != k.ChangeLog {
			t.Errorf("%s: outbox %v, change log %v; the kind says %v, %v", k.Name, o.Outbox, o.Changes, k.Outbox, k.ChangeLog)
		}
		if err := o.RegisterMetrics(prometheus.NewPedanticRegistry()); err != nil {
			t.Errorf("%s: metrics: %v", k.Name, err)
		}
		if err := o.Close(); err != nil {
			t.Errorf("%s: close: %v", k.Name, err)
		}
	}
	if got, want := strings.Join(names, " "), "memory bolt postgres"; got != want {
		t.Fatalf("kinds %q, want %q", got, want)
	}
	if got, want := storeNames(), "memory, bolt or postgres"; got != want {
		t.Fatalf("storeNames = %q, want %q", got, want)
	}
	cfg.Store = "sqlite"
	if _, err := openConfigured(cfg, tracenoop.NewTracerProvider()); err == nil || err.Error() != `store "sqlite" is not available in this build` {
		t.Fatalf("openConfigured(sqlite) = %v", err)
	}
}

// TestMigrateRefusesAStoreWithoutSchema: plantstore migrate's message for
// memory, which keeps no schema.
func TestMigrateRefusesAStoreWithoutSchema(t *testing.T) {
	err := Migrate(context.Background(), Config{Store: StoreMemory})
	if err == nil || err.Error() != "--store memory keeps no schema: nothing to migrate" {
		t.Fatalf("Migrate(memory) = %v", err)
	}
}

// TestServingFields: the serving line's store fields, by store.
func TestServingFields(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	for _, tc := range []struct {
		cfg  Config
		want map[string]any
	}{
		{Config{Store: StoreMemory}, map[string]any{"store": "memory"}},
		{Config{Store: StoreBolt, Bolt: boltstore.Config{DataDir: "/var/lib/plantstore"}}, map[string]any{"store": "bolt", "data_dir": "/var/lib/plantstore"}},
		{Config{Store: StorePostgres, Postgres: pgstore.Config{URL: "postgres://app:s3cret@db.example:5433/plants"}}, map[string]any{"store": "postgres", "postgres": "app@db.example:5433/plants"}},
	} {
		enc := zapcore.NewMapObjectEncoder()
		for _, f := range tc.cfg.ServingFields() {
			f.AddTo(enc)
		}
		if len(enc.Fields) != len(tc.want) {
			t.Errorf("%s: fields %v, want %v", tc.cfg.Store, enc.Fields, tc.want)
			continue
		}
		for k, v := range tc.want {
			if enc.Fields[k] != v {
				t.Errorf("%s: fields %v, want %v", tc.cfg.Store, enc.Fields, tc.want)
			}
		}
	}
}

// TestPostgresTarget: the serving line names the database without its
// password, from a URL, a key=value string, or the PG* variables.
func TestPostgresTarget(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGPASSWORD", "PGSERVICE", "PGSERVICEFILE"} {
		t.Setenv(v, "")
	}
	for _, tc := range []struct{ conn, env, want string }{
		{"postgres://plantstore:s3cret-pw@db.example:5433/plants?sslmode=disable", "", "plantstore@db.example:5433/plants"},
		{"host=db.example user=plantstore password=s3cret-pw dbname=plants sslmode=disable", "", "plantstore@db.example:5432/plants"},
		{"postgres://plantstore:s3cret-pw@[::1]:5432/plants?sslmode=disable", "", "plantstore@[::1]:5432/plants"},
		{"", "PGHOST=/run/pg PGUSER=app PGDATABASE=shop PGPASSWORD=s3cret-pw", "app@/run/pg:5432/shop"},
		{"postgres://plantstore:s3cret-pw@db.example:notaport/plants", "", "unparsable --postgres-url"},
	} {
		for kv := range strings.FieldsSeq(tc.env) {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		if got := postgresTarget(tc.conn); got != tc.want {
			t.Errorf("postgresTarget(%q) with %q = %q, want %q", tc.conn, tc.env, got, tc.want)
		}
	}
}
