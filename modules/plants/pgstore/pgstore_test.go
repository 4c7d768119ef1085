package pgstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/internal/testmode"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestMain starts the shared cluster and the one TestOnAClusterAlone takes
// as the run begins, side by side while the serial tests run rather than
// one after the other, and runs at least four tests at once (-parallel
// says otherwise): the package's tests mostly wait on PostgreSQL, its
// locks, leases and timeouts, rather than compute. Not many more: each
// test running at once holds a database of its own on the shared cluster,
// and more of them means more databases made, which costs the machine
// more than the waits it saves.
func TestMain(m *testing.M) {
	flag.Parse()
	testmode.RaiseParallel(max(4, runtime.GOMAXPROCS(0)))
	pgtest.MainStartingClusters(m, 1)
}

// plantsSchema is the store's schema: pgtest migrates a database once and
// hands it, truncated, from test to test.
var plantsSchema = pgtest.NewSchema(func(ctx context.Context, url string) error {
	s, err := Open(ctx, Config{URL: url})
	if err != nil {
		return err
	}
	return s.Close()
})

var ctx = context.Background()

// mustStart starts s, as the program's start hook does: a store creates
// only once started.
func mustStart(tb testing.TB, s *Store) {
	tb.Helper()
	if err := s.Start(ctx); err != nil {
		tb.Fatal(err)
	}
}

// openStore opens a migrated store on url, closed when the test ends.
func openStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	mustStart(t, s)
	t.Cleanup(func() { s.Close() })
	return s
}

// show runs a SHOW on one of the store's pooled sessions.
func show(t *testing.T, s *Store, setting string) string {
	t.Helper()
	var v string
	if err := s.pool.QueryRow(ctx, "SHOW "+setting).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", setting, err)
	}
	return v
}

func TestSessionSettings(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	if got := show(t, s, "statement_timeout"); got != "5s" {
		t.Errorf("default statement_timeout = %q, want 5s", got)
	}
	if got := show(t, s, "application_name"); got != "plantstore" {
		t.Errorf("application_name = %q, want plantstore", got)
	}
	if got := s.pool.Config().MaxConns; got != defaultMaxConns {
		t.Errorf("default MaxConns = %d, want %d", got, defaultMaxConns)
	}
	if got := s.pool.Config().ConnConfig.ConnectTimeout; got != defaultConnectTimeout {
		t.Errorf("default ConnectTimeout = %v, want %v", got, defaultConnectTimeout)
	}

	// The configuration wins over the same settings in the URL; other URL
	// parameters stay.
	s = openStore(t, Config{
		URL:              url + "&statement_timeout=1000&connect_timeout=1&application_name=replica-7",
		MaxConns:         3,
		ConnectTimeout:   2 * time.Second,
		StatementTimeout: 1500 * time.Millisecond,
	})
	if got := show(t, s, "statement_timeout"); got != "1500ms" {
		t.Errorf("statement_timeout = %q, want 1500ms", got)
	}
	if got := show(t, s, "application_name"); got != "replica-7" {
		t.Errorf("application_name = %q, want the URL's replica-7", got)
	}
	if got := s.pool.Config().MaxConns; got != 3 {
		t.Errorf("MaxConns = %d, want 3", got)
	}
	if got := s.pool.Config().ConnConfig.ConnectTimeout; got != 2*time.Second {
		t.Errorf("ConnectTimeout = %v, want 2s", got)
	}
}

// TestLibpqEnvironment: with an empty URL, the PG* variables say where the
// database is, as they do for psql. Not parallel: t.Setenv sets the
// process's environment, which Go forbids in a parallel test.
func TestLibpqEnvironment(t *testing.T) {
	c := pgtest.Shared(t)
	cfg, err := pgx.ParseConfig(c.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGHOST", c.SocketDir())
	t.Setenv("PGPORT", "5432")
	t.Setenv("PGUSER", pgtest.Superuser)
	t.Setenv("PGDATABASE", cfg.Database)
	t.Setenv("PGSSLMODE", "disable")
	s := openStore(t, Config{URL: ""})
	var db string
	if err := s.pool.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db != cfg.Database {
		t.Fatalf("connected to %q, want PGDATABASE %q", db, cfg.Database)
	}
}

func TestBadURL(t *testing.T) {
	t.Parallel()
	_, err := New(Config{URL: "postgres://user:secret@host:notaport/db"})
	if err == nil {
		t.Fatal("New accepted a URL with a bad port")
	}
	if msg := err.Error(); strings.Contains(msg, "secret") {
		t.Fatalf("error %q shows the password", msg)
	}
}

// assertUnavailable checks that every call of s fails with
// plant.ErrUnavailable.
func assertUnavailable(t *testing.T, s *Store) {
	t.Helper()
	tag := "t"
	after := int64(1)
	calls := map[string]func() error{
		"Ping":   func() error { return s.Ping(ctx) },
		"Create": func() error { _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "n"}); return err },
		"Get":    func() error { _, err := s.Get(ctx, 1); return err },
		"List":   func() error { _, err := s.List(ctx, plant.ListQuery{Limit: 10}); return err },
		"ListTagAfter": func() error {
			_, err := s.List(ctx, plant.ListQuery{Limit: 10, Tag: &tag, After: &after})
			return err
		},
		"Delete":  func() error { return s.Delete(ctx, 1) },
		"Migrate": func() error { return s.Migrate(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, plant.ErrUnavailable) {
			t.Errorf("%s = %v, want ErrUnavailable", name, err)
		}
	}
}

func TestNoServerIsUnavailable(t *testing.T) {
	t.Parallel()
	// A socket directory where no server listens, and a loopback port that
	// refuses connections.
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := refused.Addr().String()
	refused.Close()
	for _, url := range []string{
		"host=" + t.TempDir() + " user=postgres dbname=plants sslmode=disable",
		"postgres://postgres@" + addr + "/plants?sslmode=disable",
	} {
		t.Run(url, func(t *testing.T) {
			s, err := New(Config{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			mustStart(t, s)
			defer s.Close()
			assertUnavailable(t, s)
		})
	}
}

// TestSilentServerIsUnavailable: a server that accepts connections and
// never answers (a hung host, a black-holed network) costs a call the
// connect timeout, then the call fails as unavailable.
func TestSilentServerIsUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // accepted and never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	s, err := New(Config{
		URL:            "postgres://postgres@" + ln.Addr().String() + "/plants?sslmode=disable",
		ConnectTimeout: 50 * time.Millisecond, // each of assertUnavailable's seven calls waits it out
	})
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, s)
	defer s.Close()
	assertUnavailable(t, s)
}

// TestStatementTimeoutIsUnavailable: a create that waits on a row another
// transaction holds is cancelled by the server's statement_timeout and
// reported as unavailable, not as a failure of the request.
func TestStatementTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url, StatementTimeout: 200 * time.Millisecond})
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO plants (id, name) VALUES (1, 'held')"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx, plant.Plant{ID: 1, Name: "waiting"})
	if !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Create behind an uncommitted insert = %v, want ErrUnavailable", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The connection survived the cancelled statement.
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "now"}); err != nil {
		t.Fatalf("Create after the rollback = %v", err)
	}
}

// TestStatementErrorIsNotUnavailable: an error in the statement itself
// (here, text PostgreSQL cannot store) is not "retry later".
func TestStatementErrorIsNotUnavailable(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	_, err := s.Create(ctx, plant.Plant{ID: 1, Name: "nul \x00 byte"})
	if err == nil || errors.Is(err, plant.ErrUnavailable) || errors.Is(err, plant.ErrConflict) {
		t.Fatalf("Create with a NUL byte = %v, want a plain error", err)
	}
}

// testRecoversWhenTheServerReturns: while the server is down every call is
// unavailable; once it is back the same store serves again, without being
// reopened. It runs in TestOnAClusterAlone: it stops c's server.
func testRecoversWhenTheServerReturns(t *testing.T, c *pgtest.Cluster) {
	s := openStore(t, Config{URL: c.NewMigratedDatabase(t, plantsSchema), ConnectTimeout: time.Second})
	want := plant.Plant{ID: 1, Name: "before", Tag: plant.StringPtr("t")}
	if _, err := s.Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	assertUnavailable(t, s)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// Pooled connections the server closed are found dead and replaced; a
	// call may still meet one before the pool does.
	poll.Wait(t, 100*time.Millisecond, 5*time.Second, "a Ping after the restart", func() (bool, error) {
		err := s.Ping(ctx)
		if err != nil && !errors.Is(err, plant.ErrUnavailable) {
			return false, poll.Stop(fmt.Errorf("Ping = %w, want ErrUnavailable until it answers", err))
		}
		return err == nil, err
	})
	got, err := s.Get(ctx, 1)
	if err != nil || !got.Equal(want) {
		t.Fatalf("Get after restart = %+v, %v", got, err)
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 2, Name: "after"}); err != nil {
		t.Fatalf("Create after restart = %v", err)
	}
}

// TestListPlansSeekAnIndex: on a table large enough for the planner to
// care, both list statements read an index from the cursor on, with no
// filter but the tag's own check after the seek by its digest, even for a
// tag that is rare or absent past the cursor. The
// generic plan, which a prepared statement may settle on after a few
// executions, must not sort either: it cannot know how many rows a tag has.
func TestListPlansSeekAnIndex(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	if _, err := s.pool.Exec(ctx, `INSERT INTO plants
SELECT i, 'p', CASE WHEN i % 10000 = 0 THEN 'rare' WHEN i < 10000 THEN 'old' WHEN i % 2 = 0 THEN 'common' END
FROM generate_series(1, 50000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE plants"); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	explain := func(sql string) string {
		rows, _ := conn.Query(ctx, sql)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return strings.Join(lines, "\n")
	}
	for _, stmt := range []string{
		"PREPARE list(int, bigint) AS " + listSQL,
		"PREPARE list_tag(int, text, bigint) AS " + listTagSQL,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _, _ = conn.Exec(ctx, "DEALLOCATE ALL; RESET plan_cache_mode") }()
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ execute, index string }{
			{"list(100, -9223372036854775808)", "plants_pkey"},
			{"list(100, 40000)", "plants_pkey"},
			{"list_tag(100, 'rare', -9223372036854775808)", "plants_tag_id"},
			{"list_tag(100, 'common', 40000)", "plants_tag_id"},
			{"list_tag(100, 'old', 20000)", "plants_tag_id"},
			{"list_tag(100, 'absent', 0)", "plants_tag_id"},
		} {
			plan := explain("EXPLAIN (COSTS OFF) EXECUTE " + c.execute)
			if !strings.Contains(plan, "Index Scan using "+c.index) && !strings.Contains(plan, "Bitmap Index Scan on "+c.index) ||
				strings.Contains(plan, "Seq Scan") || filtersBeyondTagCheck(plan) ||
				(mode == "force_generic_plan" && strings.Contains(plan, "Sort")) {
				t.Errorf("%s, %s: the plan does not seek %s:\n%s", mode, c.execute, c.index, plan)
			}
		}
	}
}

// filtersBeyondTagCheck reports whether a plan filters rows other than by
// the tag check that follows a seek by the tag's digest, which drops only
// the rows of a colliding tag.
func filtersBeyondTagCheck(plan string) bool {
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "Filter") && !strings.HasPrefix(strings.TrimSpace(line), "Filter: (tag = ") {
			return true
		}
	}
	return false
}
