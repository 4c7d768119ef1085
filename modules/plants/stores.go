package plants

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Config is the plants part of the program's configuration. Each store
// owns its own part (and its flags), a field here beside the store table;
// only the chosen store's is used.
type Config struct {
	Store        string // memory, bolt or postgres
	MaxBodyBytes int64
	// MaxImportBytes caps one stream of the bulk create (POST /plants:import).
	MaxImportBytes int64
	// ChangesRetention is how long every store keeps a change in its log,
	// and a delivered webhook event for a replay; zero keeps them for
	// ever, on every store (the flag's default is defaultChangesRetention).
	ChangesRetention time.Duration

	Bolt     boltstore.Config
	Postgres pgstore.Config // Tracer is set by openConfigured
}

// Store names accepted by Config.Store: the kinds' names.
const (
	StoreMemory   = "memory"
	StoreBolt     = "bolt"
	StorePostgres = "postgres"
)

// storeKinds is every store this build can open, in the order --store's help
// names them. A new store is its package and a line here, with the
// functions it names below (and its part of Config, when it has flags):
// the flag's choices and checks, the module, plantstore migrate, the
// webhooks' need of an outbox and the serving line all read this table.
var storeKinds = []StoreKind{
	{Name: StoreMemory, ChangeLog: true, open: openMemory},
	{Name: StoreBolt, Outbox: true, ChangeLog: true, open: openBolt, migrate: migrateBolt, flags: boltFlags, validate: validateBolt, serving: servingBolt},
	{Name: StorePostgres, Outbox: true, ChangeLog: true, open: openPostgres, migrate: migratePostgres, flags: postgresFlags, validate: validatePostgres, serving: servingPostgres},
}

// StoreKind is one store this build can open: what it supports, and how to
// open, migrate, configure and name it.
type StoreKind struct {
	// Name is the --store value, the store label of the store's metrics
	// and the serving line's store.
	Name string

	// What the store keeps besides plant.Store.
	Outbox    bool // an outbox written in each change's commit: webhooks can run on it
	ChangeLog bool // a change log: the change feed, and what wakes the webhooks' dispatcher

	// open builds the store from cfg without starting anything.
	open func(cfg Config, tp trace.TracerProvider) (*openedStore, error)
	// migrate brings the store's schema up to date and closes it; nil for
	// a store that keeps no schema.
	migrate func(ctx context.Context, cfg Config) error
	// flags registers the store's own flags (its part of Config); nil for
	// none.
	flags func(c *Config, fs *flag.FlagSet)
	// validate checks the store's part of cfg; chosen tells whether it is
	// the configured store. Nil for a store without flags.
	validate func(cfg Config, chosen bool) error
	// serving is what the serving line says of where the store keeps its
	// plants; nil for nothing.
	serving func(cfg Config) []zap.Field
}

// LookupStore returns the kind named name (a --store value).
func LookupStore(name string) (StoreKind, bool) {
	for _, k := range storeKinds {
		if k.Name == name {
			return k, true
		}
	}
	return StoreKind{}, false
}

// storeNames is the kinds' names as a sentence: "memory, bolt or postgres".
func storeNames() string {
	names := make([]string, len(storeKinds))
	for i, k := range storeKinds {
		names[i] = k.Name
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// openedStore is a store as its kind opened it, not yet started: its faces,
// and what starts it and measures it. Close closes it.
type openedStore struct {
	Kind    StoreKind
	Store   plant.Store
	Outbox  outbox.Store // nil for a store that keeps none
	Changes changes.ChangeLog
	// Endpoints keeps the webhook endpoints made through the API.
	Endpoints endpointstore.Store

	start   []func(context.Context) error // in order
	metrics []storeMetric
}

// openConfigured opens the store cfg names, without Fx: Start sets its goroutines
// going (after postgres's migrations), Close closes it. cfg's retention
// and the tracer of postgres's statements are handed to the store.
func openConfigured(cfg Config, tp trace.TracerProvider) (*openedStore, error) {
	k, ok := LookupStore(cfg.Store)
	if !ok {
		return nil, fmt.Errorf("store %q is not available in this build", cfg.Store)
	}
	o, err := k.open(cfg, tp)
	if err != nil {
		return nil, err
	}
	o.Kind = k
	return o, nil
}

// Start runs the store's start steps in order, stopping at the first that
// fails.
func (o *openedStore) Start(ctx context.Context) error {
	for _, start := range o.start {
		if err := start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the store.
func (o *openedStore) Close() error { return o.Store.Close() }

// RegisterMetrics exports on reg the figures the store keeps of itself
// (its commits, say); a store that keeps none exports nothing.
func (o *openedStore) RegisterMetrics(reg prometheus.Registerer) error {
	return registerStoreMetrics(reg, o.metrics)
}

// Migrate brings the schema of the store cfg names up to date, and closes
// it: plantstore migrate. A store that keeps no schema is refused.
func Migrate(ctx context.Context, cfg Config) error {
	k, ok := LookupStore(cfg.Store)
	if !ok || k.migrate == nil {
		return fmt.Errorf("--store %s keeps no schema: nothing to migrate", cfg.Store)
	}
	return k.migrate(ctx, cfg)
}

// ServingFields is what the serving line says of the store: its name, and
// where it keeps its plants. It holds no secret: the database's user, host
// and name, never its password.
func (c Config) ServingFields() []zap.Field {
	fields := []zap.Field{zap.String("store", c.Store)}
	if k, ok := LookupStore(c.Store); ok && k.serving != nil {
		fields = append(fields, k.serving(c)...)
	}
	return fields
}

// The memory store: no schema, no flags, nothing on disk.

func openMemory(cfg Config, _ trace.TracerProvider) (*openedStore, error) {
	s := memstore.NewWithOptions(memstore.Options{ChangesRetention: cfg.ChangesRetention})
	return &openedStore{Store: s, Changes: s, Endpoints: s.Endpoints(), start: []func(context.Context) error{s.Start}}, nil // the change log's pruner
}

// The bolt store: plants.db in --data-dir.

func openBolt(cfg Config, _ trace.TracerProvider) (*openedStore, error) {
	boltCfg := cfg.Bolt
	boltCfg.ChangesRetention = cfg.ChangesRetention
	s, err := boltstore.OpenConfig(boltCfg)
	if err != nil {
		return nil, err
	}
	return &openedStore{
		Store: s, Outbox: s.Outbox(), Changes: s.Changes(), Endpoints: s.Endpoints(),
		start:   []func(context.Context) error{s.Start}, // the group committer's goroutine, and the pruner's
		metrics: boltMetrics(s),
	}, nil
}

// migrateBolt opens plants.db, which applies the file's own upgrades under
// its file lock (so it fails while a server holds the file).
func migrateBolt(_ context.Context, cfg Config) error {
	s, err := boltstore.Open(cfg.Bolt.DataDir)
	if err != nil {
		return err
	}
	return s.Close()
}

func boltFlags(c *Config, fs *flag.FlagSet) { c.Bolt.RegisterFlags(fs) }

// validateBolt: only the bolt store needs a data dir.
func validateBolt(cfg Config, chosen bool) error {
	if !chosen {
		return nil
	}
	return cfg.Bolt.Validate()
}

func servingBolt(cfg Config) []zap.Field {
	return []zap.Field{zap.String("data_dir", cfg.Bolt.DataDir)}
}

// boltMetrics is what the bolt store tells of its group commit
// (boltstore.Stats): the ratio of the two counters' rates is the writes
// each commit carried, the group commit's batch size, 1 for writers one at
// a time and growing with concurrent ones.
func boltMetrics(s *boltstore.Store) []storeMetric {
	return []storeMetric{
		{name: "plantstore_bolt_commits_total",
			help:  "Transactions the bolt store's group commit made durable (two fdatasyncs each).",
			value: func() float64 { return float64(s.Stats().Commits) }},
		{name: "plantstore_bolt_writes_committed_total",
			help:  "Writes those transactions carried; divided by plantstore_bolt_commits_total, the writes per commit (the group commit's batch size).",
			value: func() float64 { return float64(s.Stats().WritesCommitted) }},
	}
}

// The postgres store: a database that several replicas share.

func openPostgres(cfg Config, tp trace.TracerProvider) (*openedStore, error) {
	pgCfg := cfg.Postgres
	pgCfg.Tracer = postgresTracer(tp)
	pgCfg.ChangesRetention = cfg.ChangesRetention
	pg, err := pgstore.New(pgCfg)
	if err != nil {
		return nil, err
	}
	return &openedStore{
		Store: pg, Outbox: pg.Outbox(), Changes: pg, Endpoints: pg.Endpoints(),
		// Migrating is the first contact with the database: an unreachable
		// one fails the start (exit 2) once the connect timeout has passed,
		// and the orchestrator restarts the process. Then the create lanes,
		// the change log's listener and pruner.
		start:   []func(context.Context) error{pg.Migrate, pg.Start},
		metrics: postgresMetrics(pg),
	}, nil
}

// migratePostgres applies the embedded migrations under the advisory
// lock, as a starting replica does.
func migratePostgres(ctx context.Context, cfg Config) error {
	s, err := pgstore.New(cfg.Postgres)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	return s.Migrate(ctx)
}

// postgresTracer makes each PostgreSQL statement a span under the store
// call's (only inside a traced request: otelpgx starts none without a
// recording parent). Its metrics would duplicate the store histogram, so
// they go to a no-op meter. Statements carry their SQL, which has
// placeholders, never the values.
func postgresTracer(tp trace.TracerProvider) pgx.QueryTracer {
	return otelpgx.NewTracer(otelpgx.WithTracerProvider(tp), otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()))
}

func postgresFlags(c *Config, fs *flag.FlagSet) { c.Postgres.RegisterFlags(fs) }

// validatePostgres checks the postgres flags whichever store is chosen: a
// wrong value is a mistake waiting for the day the store is switched.
func validatePostgres(cfg Config, _ bool) error { return cfg.Postgres.Validate() }

func servingPostgres(cfg Config) []zap.Field {
	return []zap.Field{zap.String("postgres", postgresTarget(cfg.Postgres.URL))}
}

// postgresTarget is the database the store connects to, as
// user@host:port/database: the URL (or key=value string) as libpq reads
// it, with what it leaves out from the PG* variables. The password is
// never part of it.
func postgresTarget(connString string) string {
	pc, err := pgconn.ParseConfig(connString)
	if err != nil {
		// The start reported it already; show no part of a string that
		// may hold a password.
		return "unparsable --postgres-url"
	}
	return pc.User + "@" + net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))) + "/" + pc.Database
}

// postgresMetrics is what the postgres store tells of its commits and
// replication (see docs/reliability.md, "Replication"): a commit its caller
// stopped waiting for is, with a synchronous standby, almost always a
// commit waiting for the standby; a canceled wait is a commit on the
// primary only, answered 503 as unknown. It also counts the change log
// listener's connections, whose rise is a listener losing its connection.
func postgresMetrics(pg *pgstore.Store) []storeMetric {
	return []storeMetric{
		{name: "plantstore_postgres_commits_orphaned", gauge: true,
			help:  "Statements that may commit, still running after their caller was answered 503 at its deadline: with a synchronous standby, commits waiting for it.",
			value: func() float64 { return float64(pg.Stats().OrphanedCommits) }},
		{name: "plantstore_postgres_commits_outlived_total",
			help:  "Statements that may commit and outlived their caller's deadline (the caller was answered 503; the statement was left to finish).",
			value: func() float64 { return float64(pg.Stats().OutlivedCommits) }},
		{name: "plantstore_postgres_commits_unreplicated_total",
			help:  "Commits whose wait for the synchronous standbys was canceled (the server warned: committed locally, maybe not replicated); each was answered 503 as unknown.",
			value: func() float64 { return float64(pg.Stats().UnreplicatedCommits) }},
		{name: "plantstore_postgres_change_listens_total",
			help:  "Connections the change log's listener made and ran LISTEN on: one at start, one more at each reconnect. While it has none, other replicas' changes reach this replica's waiting feed followers only at their next look, within a second.",
			value: func() float64 { return float64(pg.Stats().ChangeListens) }},
	}
}

// storeMetric is one figure a store keeps of itself, exported as a counter
// (or a gauge) that reads it at each scrape.
type storeMetric struct {
	name, help string
	gauge      bool
	value      func() float64
}

func registerStoreMetrics(reg prometheus.Registerer, metrics []storeMetric) error {
	for _, m := range metrics {
		var c prometheus.Collector
		if m.gauge {
			c = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: m.name, Help: m.help}, m.value)
		} else {
			c = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: m.name, Help: m.help}, m.value)
		}
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
