// Package pgstore is the PostgreSQL plant.Store, for running several
// stateless replicas on one shared database.
//
// It keeps plants in one table, plants(id bigint primary key, name text not
// null, tag text), and the log of their changes in another (see
// changelog.go), created by migrations embedded in the binary and applied
// at start under an advisory lock (see Migrate). Every call is one round trip
// on a pgx connection pool (concurrent creates share theirs: see batch.go;
// a create whose id is taken, or a write that changes nothing, adds a read
// to tell which answer it is),
// bounded by the statement timeout on the server
// and by a deadline on the client, so a database that stops answering costs
// a request seconds, not forever. A statement that may commit is never
// canceled: past the deadline its caller is answered and the statement is
// left to finish (see commit.go), so that a commit waiting for a
// synchronous standby is never made the primary's alone. Failures to reach
// the database are plant.ErrUnavailable (the API answers 503 with
// Retry-After); the pool reconnects by itself once the database is back.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plantstore/plantstore/internal/storekit"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Defaults for the zero values of Config.
const (
	defaultMaxConns         = 16
	defaultConnectTimeout   = 5 * time.Second
	defaultStatementTimeout = 5 * time.Second
)

// Config configures a Store.
type Config struct {
	// URL is a libpq connection string, URL (postgres://...) or key=value.
	// Whatever it leaves out comes from the libpq environment variables
	// (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, PGSSLMODE, ...) and
	// then libpq's defaults, so "" configures everything from PG*.
	URL string
	// MaxConns is the pool size: the most statements in flight at once.
	MaxConns int
	// ConnectTimeout bounds opening one connection. It wins over the URL's
	// connect_timeout and PGCONNECT_TIMEOUT.
	ConnectTimeout time.Duration
	// StatementTimeout bounds each statement on the server
	// (statement_timeout). It wins over a statement_timeout in the URL.
	StatementTimeout time.Duration
	// CommitTimeout bounds how long a statement that may commit keeps its
	// connection after its caller's deadline answered the caller 503 (see
	// commit.go): the connection is then closed, never canceled.
	CommitTimeout time.Duration
	// Tracer, when set, watches every statement and connection acquire of
	// the pool (not the migration's session): the program sets otelpgx's,
	// so that each query is a span under the store call that made it.
	Tracer pgx.QueryTracer
	// ChangesRetention is how long the change log keeps a change, and the
	// outbox a delivered event (for a replay); pruned past it (see
	// changelog.go). Zero keeps them for ever, as on every store.
	ChangesRetention time.Duration
}

// Store is the PostgreSQL plant.Store. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// migrateConfig connects the migration's own session, which holds the
	// advisory lock and has no statement timeout (a migration may take long;
	// the start-up deadline bounds it).
	migrateConfig *pgx.ConnConfig
	// callTimeout is the client-side deadline of one call: waiting for a
	// connection, connecting, and the statement. It catches what the server
	// cannot, such as a network that drops packets.
	callTimeout time.Duration
	// settled is the snapshots' version watermark (see snapshot.go).
	settled settledVersions
	// commitTimeout bounds a statement that may commit (see commit.go).
	commitTimeout time.Duration
	stats         commitStats
	maxOrphaned   int64 // commits whose callers left, at most (see commit)
	closing       context.Context
	stopCommits   context.CancelFunc // ends the statements' contexts at Close
	creates       *batcher
	barriers      *readBarriers               // the read barriers reads share (see readbarrier.go)
	hook          writeHook                   // nil: a change writes and logs the plant only
	hooked        map[*changeStatement]string // each change statement with the hook's SQL
	changed       storekit.Waker              // woken at each change this process commits, or a replica's notification
	notifyPending chan struct{}               // a change committed since the last notification (see notify)
	retention     time.Duration               // zero keeps every change
	background    backgroundTasks             // the change log's listener and notifier (see changelog.go)
	pruner        storekit.Pruner             // the change log's, the outbox's and the plant heads' (see changelog.go)
	history       atomic.Uint64               // the database's history id, read by Migrate (see history.go)
}

// New returns a store on a connection pool. It does not connect: the pool
// opens connections on demand, and Migrate is the first to need one.
func New(cfg Config) (*Store, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL) // also reads the PG* variables
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err) // ParseConfig masks passwords
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultMaxConns
	}
	if cfg.MaxConns > math.MaxInt32 {
		return nil, fmt.Errorf("postgres: a pool of %d connections is more than pgx allows", cfg.MaxConns)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	if cfg.StatementTimeout <= 0 {
		cfg.StatementTimeout = defaultStatementTimeout
	}
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = defaultCommitTimeout
	}
	pc.MaxConns = int32(cfg.MaxConns) //nolint:gosec // G115: checked against math.MaxInt32 above
	pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	params := pc.ConnConfig.RuntimeParams
	if params["application_name"] == "" {
		params["application_name"] = "plantstore" // names the sessions in pg_stat_activity
	}

	// No cancel request, ever, and a note of the canceled wait's warning:
	// see commit.go.
	closing, stopCommits := context.WithCancel(context.Background())
	pc.BeforeConnect = noCancel(closing)
	pc.ConnConfig.OnNotice = onNotice

	migrateConfig := pc.ConnConfig.Copy()
	migrateConfig.RuntimeParams["statement_timeout"] = "0"
	params["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
	pc.ConnConfig.Tracer = cfg.Tracer
	pc.AfterConnect = nameServer // which server a read ran on (see readbarrier.go)

	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		stopCommits()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{
		pool:          pool,
		migrateConfig: migrateConfig,
		callTimeout:   cfg.ConnectTimeout + cfg.StatementTimeout,
		commitTimeout: max(cfg.CommitTimeout, cfg.ConnectTimeout+cfg.StatementTimeout),
		maxOrphaned:   int64(max(1, cfg.MaxConns/2)),
		retention:     cfg.ChangesRetention,
		notifyPending: make(chan struct{}, 1),
	}
	s.closing, s.stopCommits = closing, stopCommits
	s.creates = newBatcher(s, createLanes(cfg.MaxConns))
	s.barriers = newReadBarriers(s)
	return s, nil
}

// Open returns a store whose schema is migrated: New, then Migrate.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close() // the pool has nothing to flush; the migration's error is the news
		return nil, err
	}
	return s, nil
}

// The statements, one round trip each. pgx prepares each one once per
// connection and then only binds and executes it.
const (
	// createSQL inserts the plant, or does nothing when its id is taken
	// (the create statement, batchSQL, does so for many, logging each):
	// one row affected means Created. For none, a read of the stored plant
	// tells Unchanged from a conflict (see createOne). DO NOTHING waits for
	// a racing uncommitted insert of the id to end, so the read, a new
	// statement, sees the winner. A retry, identical or not, writes nothing
	// (DO UPDATE would write a new version of the row for an identical one,
	// and could not say which it was without the undocumented xmax).
	createSQL = `INSERT INTO plants (id, name, tag) VALUES ($1, $2, $3)
ON CONFLICT (id) DO NOTHING`

	getSQL = `SELECT name, tag FROM plants WHERE id = $1`
	// durableGetSQL is getSQL for an answer given on the stored row (an
	// Unchanged, a 412): the row may have been committed on the primary
	// only (its commit's wait for the standbys canceled by an operator).
	// The row lock gives the statement a transaction id and a WAL record,
	// so its commit waits for the standbys up to a point past the row's
	// own commit: once it returns, the row is as durable as a fresh
	// commit. A key-share lock blocks only a delete of the row.
	durableGetSQL = `SELECT name, tag FROM plants WHERE id = $1 FOR KEY SHARE`
	// readBarrierSQL is the read barrier (see readbarrier.go), a commit
	// that reads share, and the 404 of a write that found no row commits
	// it after its statements (see barrier). With synchronous standbys
	// configured it writes a WAL record (a transactional logical message,
	// which needs no privilege and no logical decoding), so its commit
	// waits for the standbys up to a point past every commit a read before
	// it saw: a row, or the absence of one, that a canceled wait left on
	// the primary only is not answered until the standbys have it, and a
	// failover cannot take back what a read showed. Without synchronous
	// standbys it writes nothing.
	// It returns its statement's snapshot and its own transaction id: what
	// it covers (see readbarrier.go).
	readBarrierSQL = `SELECT pg_current_snapshot()::text, pg_current_xact_id()::text, pg_logical_emit_message(true, 'plantstore', '')::text
WHERE current_setting('synchronous_standby_names') <> ''`

	// The two list statements seek an index to the cursor and read one
	// page, whatever the table's size and the tag's frequency. The cursor
	// is inclusive (the id after the last one seen), so the first page is
	// the same statement from the smallest id.
	listSQL = `SELECT id, name, tag FROM plants WHERE id >= $2 ORDER BY id LIMIT $1`
	// The tag filter reads as "tag = $2 AND id >= $3", spelled as a row
	// comparison on the (md5(tag), id) index so that only that index can
	// give the order: with "md5(tag) = md5($2)" the planner may walk the
	// primary key and filter, which for a rare tag reads the whole table.
	// (Text comparison breaks ties bytewise, so <= and >= together mean
	// equal.) The index holds a digest because a tag may be longer than a
	// btree entry; "tag = $2" drops the rows of a colliding tag.
	listTagSQL = `SELECT id, name, tag FROM plants WHERE (md5(tag), id) >= (md5($2), $3) AND md5(tag) <= md5($2) AND tag = $2 ORDER BY md5(tag), id LIMIT $1`
)

// Create implements plant.Store: Created once the plant is committed,
// Unchanged if an identical plant was there, plant.ErrConflict if a
// different one was. Concurrent creates share a statement (see batch.go).
// The call deadline bounds the whole: the wait for a lane included.
func (s *Store) Create(ctx context.Context, p plant.Plant) (plant.CreateResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	return s.creates.create(ctx, p)
}

// createOne is Create in a statement of its own on conn, in a lane's
// context (see commit.go): an insert, and for an id already taken a
// durable read that says which answer it is. A plant deleted between the
// two leaves its id free again, so the insert is tried anew.
func (s *Store) createOne(ctx context.Context, conn *pgx.Conn, p plant.Plant) (plant.CreateResult, error) {
	for {
		inserted, err := s.insertOne(ctx, conn, p)
		if err != nil {
			return 0, failed("create", err)
		}
		if inserted {
			return plant.Created, nil
		}
		stored, found, err := s.getDurably(ctx, conn, p.ID)
		switch {
		case err != nil:
			return 0, failed("create", err)
		case !found:
			continue // deleted since the insert: the id is free again
		case stored.Equal(p):
			return plant.Unchanged, nil
		}
		return 0, plant.ErrConflict
	}
}

// insertOne inserts p unless its id is taken, and reports whether it did,
// in the statement a batch would use.
func (s *Store) insertOne(ctx context.Context, conn *pgx.Conn, p plant.Plant) (inserted bool, err error) {
	created, err := s.insert(ctx, conn, []changes.Change{{Ctx: ctx, Kind: changes.Created, After: p}})
	_, inserted = created[p.ID]
	return inserted, err
}

// getDurably reads the plant stored under id on conn, as durable as a
// fresh commit: see durableGetSQL.
func (s *Store) getDurably(ctx context.Context, conn *pgx.Conn, id int64) (p plant.Plant, found bool, err error) {
	p.ID = id
	err = s.checked(conn, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, durableGetSQL, id).Scan(&p.Name, &p.Tag)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return plant.Plant{}, false, nil
	}
	return p, err == nil, err
}

// Get implements plant.Store. With synchronous standbys the read waits for a
// read barrier (see readbarrier.go): its answer is never a state a failover
// can take back.
func (s *Store) Get(ctx context.Context, id int64) (plant.Plant, error) {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	p := plant.Plant{ID: id}
	found := false
	err := s.read(ctx, func(br pgx.BatchResults) error {
		err := br.QueryRow().Scan(&p.Name, &p.Tag)
		found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	}, getSQL, id)
	if err != nil {
		return plant.Plant{}, failed("get", err)
	}
	if !found {
		return plant.Plant{}, plant.ErrNotFound
	}
	return p, nil
}

// List implements plant.Store with keyset paging: the primary key, or the
// (md5(tag), id) index for a tag, is sought to the cursor, so a deep page costs
// what the first one does. Like Get, it waits for a read barrier.
func (s *Store) List(ctx context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	from := int64(math.MinInt64)
	if q.After != nil {
		if *q.After == math.MaxInt64 {
			return []plant.Plant{}, nil // nothing comes after the largest id
		}
		from = *q.After + 1
	}
	sql, args := listSQL, []any{q.Limit, from}
	if q.Tag != nil {
		sql, args = listTagSQL, []any{q.Limit, *q.Tag, from}
	}
	var plants []plant.Plant
	err := s.read(ctx, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		plants, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (plant.Plant, error) {
			var p plant.Plant
			err := row.Scan(&p.ID, &p.Name, &p.Tag)
			return p, err
		})
		return err
	}, sql, args...)
	if err != nil {
		return nil, failed("list", err)
	}
	return plants, nil
}

// Delete implements plant.Store. The delete runs as a commit (see
// commit.go): the call deadline answers the caller and leaves it to finish.
func (s *Store) Delete(ctx context.Context, id int64) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	changes := []changes.Change{{Ctx: ctx, Kind: changes.Deleted, Before: plant.Plant{ID: id}}}
	deleted := 0
	err := s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		committed, err := s.change(ctx, conn, deleteStatement, []any{id}, changes)
		if deleted = len(committed); err == nil && deleted == 0 {
			err = barrier(ctx, conn)
		}
		return err
	})
	if err != nil {
		return failed("delete", err)
	}
	if deleted == 0 {
		return plant.ErrNotFound
	}
	return nil
}

// Ping implements plant.Store: a round trip on a pooled connection, opening
// one if needed. It fails while the database is unreachable.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return failed("ping", err)
	}
	return nil
}

// Close runs the creates and read barriers already queued, then closes the pool's
// connections, waiting for calls in flight. Writes still waiting for their
// commit after a call deadline (a stalled standby, say: their callers were
// answered) get their connections closed then, never canceled: the server
// finishes their commits.
func (s *Store) Close() error {
	drained := make(chan struct{})
	go func() {
		var closing sync.WaitGroup
		closing.Go(s.creates.close)
		closing.Go(s.barriers.close)
		closing.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(s.callTimeout):
	}
	s.stopCommits()
	<-drained
	s.background.stop()
	s.pruner.Stop()
	s.pool.Close()
	return nil
}
