package pgstore

import (
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
)

// queryInt runs a query answering one integer, on a connection of its own.
func queryInt(t *testing.T, url, sql string, args ...any) int64 {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestSchema: the embedded migrations make the table and the index the
// queries rely on, and record themselves.
func TestSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	openStore(t, Config{URL: url})
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable
FROM information_schema.columns WHERE table_name = 'plants' ORDER BY ordinal_position`)
	columns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(columns, ", "), "id bigint NO, name text NO, tag text YES"; got != want {
		t.Errorf("plants columns = %s, want %s", got, want)
	}
	var pk, tagIndex string
	if err := conn.QueryRow(ctx, `SELECT
    (SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'plants'::regclass AND indisprimary),
    (SELECT indexdef FROM pg_indexes WHERE tablename = 'plants' AND indexname = 'plants_tag_id')`).Scan(&pk, &tagIndex); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pk, "USING btree (id)") {
		t.Errorf("primary key index = %s", pk)
	}
	if !strings.HasSuffix(tagIndex, "USING btree (md5(tag), id)") {
		t.Errorf("tag index = %s", tagIndex)
	}
	// The claim's index holds only what is still to deliver (migration
	// 0004): delivered rows are kept, for a replay.
	var due string
	if err := conn.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'webhook_deliveries_due'`).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(due, "USING btree (endpoint, next_attempt_at) WHERE ((dead_at IS NULL) AND (delivered_at IS NULL))") {
		t.Errorf("due index = %s", due)
	}
	rows, _ = conn.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable
FROM information_schema.columns WHERE table_name = 'plant_changes' ORDER BY ordinal_position`)
	columns, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(columns, ", "), "version bigint NO, tx xid8 NO, kind smallint NO, plant_id bigint NO, name text YES, tag text YES, at timestamp with time zone NO"; got != want {
		t.Errorf("plant_changes columns = %s, want %s", got, want)
	}
	embedded, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, url, "SELECT count(*) FROM schema_migrations"); n != int64(len(embedded)) || n == 0 {
		t.Errorf("schema_migrations has %d rows, want one per embedded migration (%d)", n, len(embedded))
	}
}

// TestMigrateConcurrently: replicas starting at once, each with its own
// pool, all succeed, and each migration is applied exactly once. The first
// migration (CREATE TABLE, not IF NOT EXISTS) would fail in all but one of
// them without the lock.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const replicas = 8
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			s, err := Open(ctx, Config{URL: url, MaxConns: 2})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Open = %v", i, err)
		}
	}
	embedded, _ := loadMigrations(migrationFiles)
	if n := queryInt(t, url, "SELECT count(*) FROM schema_migrations"); n != int64(len(embedded)) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(embedded))
	}
}

// TestMigrationsApplyOnce races sessions over migrations that count how
// often they run: with the lock, each runs once and the later sessions find
// nothing to do. The second migration sleeps to hold the door open for a
// session that would not wait.
func TestMigrationsApplyOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	migrations := []migration{
		{version: 1, name: "0001_counter.sql", sql: "CREATE TABLE runs (migration int NOT NULL)"},
		{version: 2, name: "0002_slow.sql", sql: "SELECT pg_sleep(0.2); INSERT INTO runs VALUES (2)"},
		{version: 3, name: "0003_more.sql", sql: "INSERT INTO runs VALUES (3)"},
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 6
	var wg sync.WaitGroup
	errs := make([]error, sessions)
	for i := range sessions {
		wg.Go(func() { errs[i] = migrate(ctx, cfg, migrations) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("session %d: %v", i, err)
		}
	}
	for _, m := range []int64{2, 3} {
		if n := queryInt(t, url, "SELECT count(*) FROM runs WHERE migration = $1", m); n != 1 {
			t.Errorf("migration %d ran %d times, want once", m, n)
		}
	}
	if n := queryInt(t, url, "SELECT count(*) FROM schema_migrations"); n != 3 {
		t.Errorf("schema_migrations has %d rows, want 3", n)
	}
	// Nothing holds the lock any more.
	if n := queryInt(t, url, `SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); n != 0 {
		t.Errorf("%d advisory locks still held", n)
	}
}

// TestFailedMigrationLeavesNoTrace: a migration that fails is rolled back
// whole and not recorded, the error names it, and the next start applies
// the corrected file.
func TestFailedMigrationLeavesNoTrace(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	first := migration{version: 1, name: "0001_a.sql", sql: "CREATE TABLE a (x int)"}
	broken := migration{version: 2, name: "0002_b.sql", sql: "CREATE TABLE b (x int); SELECT 1/0"}
	err = migrate(ctx, cfg, []migration{first, broken})
	if err == nil || !strings.Contains(err.Error(), "0002_b.sql") || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("migrate with a broken migration = %v, want an error naming 0002_b.sql", err)
	}
	if n := queryInt(t, url, "SELECT count(*) FROM pg_tables WHERE tablename = 'b'"); n != 0 {
		t.Fatal("the failed migration's table exists")
	}
	if n := queryInt(t, url, "SELECT count(*) FROM schema_migrations"); n != 1 {
		t.Fatalf("schema_migrations has %d rows, want 1", n)
	}
	fixed := migration{version: 2, name: "0002_b.sql", sql: "CREATE TABLE b (x int)"}
	if err := migrate(ctx, cfg, []migration{first, fixed}); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, url, "SELECT count(*) FROM schema_migrations"); n != 2 {
		t.Fatalf("schema_migrations has %d rows, want 2", n)
	}
}

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	got, err := loadMigrations(fstest.MapFS{
		"migrations/0010_ten.sql": {Data: []byte("SELECT 10")},
		"migrations/0002_two.sql": {Data: []byte("SELECT 2")},
		"migrations/README.md":    {Data: []byte("not a migration")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].version != 2 || got[0].name != "0002_two.sql" || got[0].sql != "SELECT 2" || got[1].version != 10 {
		t.Fatalf("loadMigrations = %+v, want 0002 then 0010", got)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"no number":      {"migrations/create.sql": {}},
		"zero":           {"migrations/0000_zero.sql": {}},
		"shared version": {"migrations/0001_a.sql": {}, "migrations/001_b.sql": {}},
	} {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("%s: loadMigrations accepted it", name)
		}
	}
}
