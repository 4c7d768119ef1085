package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func query(t *testing.T, url, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestDatabasesAreFreshAndSeparate(t *testing.T) {
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	exec(t, a, "CREATE TABLE only_in_a (x int)")
	if got := query(t, a, "SELECT count(*)::text FROM pg_tables WHERE tablename = 'only_in_a'"); got != "1" {
		t.Fatalf("table in a: count %s", got)
	}
	if got := query(t, b, "SELECT count(*)::text FROM pg_tables WHERE tablename = 'only_in_a'"); got != "0" {
		t.Fatalf("a's table is visible in b: count %s", got)
	}
}

func TestServerSettings(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for setting, want := range map[string]string{
		"fsync":              "on", // the real durability, as in production
		"server_encoding":    "UTF8",
		"listen_addresses":   "",
		"synchronous_commit": "on",
	} {
		if got := query(t, url, "SHOW "+setting); got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}

func TestStopAndStart(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := pgtest.NewCluster(t)
	url := c.NewDatabase(t)
	query(t, url, "SELECT 'up'")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(context.Background(), url); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if _, err := os.Stat(filepath.Join(c.SocketDir(), ".s.PGSQL.5432")); !os.IsNotExist(err) {
		t.Fatalf("socket of a stopped server: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, url, "SELECT 'up again'"); got != "up again" {
		t.Fatalf("after restart: %q", got)
	}
}

// TestTCPClusterStopImmediate: a TCP cluster answers on its loopback port
// and on its socket, and a crash stop keeps what was committed.
func TestTCPClusterStopImmediate(t *testing.T) {
	t.Parallel() // a cluster of its own
	c := pgtest.NewTCPCluster(t)
	db, err := c.CreateDatabase()
	if err != nil {
		t.Fatal(err)
	}
	tcp := c.TCPURL(db, c.TCPAddr())
	exec(t, tcp, "CREATE TABLE kept (v text)")
	exec(t, c.URL(db), "INSERT INTO kept VALUES ('committed')")
	if err := c.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, tcp, "SELECT v FROM kept"); got != "committed" {
		t.Fatalf("after an immediate stop: %q, want committed", got)
	}
}

// TestReusedDatabaseIsEmpty: a database a test is done with goes to the
// next test empty: no schema, no table, no function, no setting of the
// previous test, and a public schema as initdb makes it.
func TestReusedDatabaseIsEmpty(t *testing.T) {
	var first string
	t.Run("dirty", func(t *testing.T) {
		first = pgtest.NewDatabase(t)
		exec(t, first, `CREATE SCHEMA extra; CREATE TABLE extra.t (x int); CREATE TABLE left_behind (x serial);
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'; CREATE TYPE mood AS ENUM ('ok');
ALTER DATABASE `+database(t, first)+` SET work_mem = '7MB'; REVOKE ALL ON SCHEMA public FROM PUBLIC`)
	})
	url := pgtest.NewDatabase(t)
	if url != first {
		t.Fatalf("the next database is %s, want %s again, emptied", url, first)
	}
	if got := query(t, url, `SELECT count(*)::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')`); got != "0" {
		t.Errorf("%s relations left", got)
	}
	if got := query(t, url, `SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace WHERE nspname !~ '^pg_'`); got != "information_schema,public" {
		t.Errorf("schemas %s, want information_schema,public", got)
	}
	for sql, want := range map[string]string{
		"SELECT count(*)::text FROM pg_proc WHERE proname = 'f'":    "0",
		"SELECT count(*)::text FROM pg_type WHERE typname = 'mood'": "0",
		"SHOW work_mem": "4MB",
		"SELECT nspowner::regrole::text || ' ' || nspacl::text FROM pg_namespace WHERE nspname = 'public'": "pg_database_owner {pg_database_owner=UC/pg_database_owner,=U/pg_database_owner}",
	} {
		if got := query(t, url, sql); got != want {
			t.Errorf("%s = %s, want %s", sql, got, want)
		}
	}
	exec(t, url, "CREATE TABLE left_behind (x serial)") // the name is free again
}

// TestDatabaseStillInUseIsNotReused: a database that a connection still
// uses after its test (a pool or a process left running) is dropped, never
// handed to the next test, which it could write into.
func TestDatabaseStillInUseIsNotReused(t *testing.T) {
	var first string
	var leaked *pgx.Conn
	t.Run("leaks a connection", func(t *testing.T) {
		first = pgtest.NewDatabase(t)
		var err error
		if leaked, err = pgx.Connect(context.Background(), first); err != nil {
			t.Fatal(err)
		}
	})
	defer leaked.Close(context.Background())
	url := pgtest.NewDatabase(t)
	if url == first {
		t.Fatalf("the database a connection still used was handed out again: %s", url)
	}
	if got := query(t, url, "SELECT count(*)::text FROM pg_database WHERE datname = '"+database(t, first)+"'"); got != "0" {
		t.Errorf("the database a connection still used was kept (count %s), want it dropped", got)
	}
}

// TestMigratedDatabases: NewMigratedDatabase migrates a database once and
// hands it to the next test with the migration's tables emptied (their
// sequences too) and what the migration wrote kept; one whose layout a test
// changed is dropped, and the next test gets a new one, migrated.
func TestMigratedDatabases(t *testing.T) {
	var migrations atomic.Int64
	schema := pgtest.NewSchema(func(ctx context.Context, url string) error {
		migrations.Add(1)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CREATE TABLE versions (v int); INSERT INTO versions VALUES (1);
CREATE TABLE items (id serial PRIMARY KEY, name text)`)
		return err
	})
	var first string
	t.Run("fills it", func(t *testing.T) {
		first = pgtest.NewMigratedDatabase(t, schema)
		exec(t, first, "INSERT INTO items (name) VALUES ('a'), ('b')")
	})
	t.Run("finds it empty", func(t *testing.T) {
		url := pgtest.NewMigratedDatabase(t, schema)
		if url != first {
			t.Fatalf("the next database is %s, want %s again", url, first)
		}
		if got := query(t, url, "SELECT count(*)::text FROM items"); got != "0" {
			t.Errorf("items has %s rows, want 0", got)
		}
		if got := query(t, url, "SELECT string_agg(v::text, ',') FROM versions"); got != "1" {
			t.Errorf("versions = %s, want the migration's 1", got)
		}
		if got := query(t, url, "INSERT INTO items (name) VALUES ('c') RETURNING id::text"); got != "1" {
			t.Errorf("the first id is %s, want 1", got)
		}
	})
	t.Run("changes the layout", func(t *testing.T) {
		exec(t, pgtest.NewMigratedDatabase(t, schema), "CREATE TABLE extra (x int)")
	})
	url := pgtest.NewMigratedDatabase(t, schema)
	if url == first {
		t.Fatalf("the database whose layout a test changed was handed out again: %s", url)
	}
	if got := query(t, url, "SELECT count(*)::text FROM pg_class WHERE relname = 'extra'"); got != "0" {
		t.Errorf("the changed layout reached the next test")
	}
	if got := migrations.Load(); got != 2 {
		t.Errorf("%d migrations, want 2 (the first database, and the one replacing it)", got)
	}
}

// TestParallelTestsGetDatabasesOfTheirOwn: tests running at once each get a
// database no other is using.
func TestParallelTestsGetDatabasesOfTheirOwn(t *testing.T) {
	schema := pgtest.NewSchema(func(ctx context.Context, url string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE owner (test text)")
		return err
	})
	for i := range 3 {
		t.Run("round", func(t *testing.T) {
			for j := range 4 {
				t.Run("test", func(t *testing.T) {
					t.Parallel()
					url := pgtest.NewMigratedDatabase(t, schema)
					me := fmt.Sprintf("%d/%d", i, j)
					exec(t, url, "INSERT INTO owner VALUES ('"+me+"')")
					if got := query(t, url, "SELECT string_agg(test, ',') FROM owner"); got != me {
						t.Errorf("the database holds %s, want only %s", got, me)
					}
				})
			}
		})
	}
}

// database is the name of the database at url.
func database(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}
