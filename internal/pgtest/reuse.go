package pgtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/poll"
)

// Creating a database costs about half a second on a small machine (the
// template is copied and, fsync being on, written to the disk), dropping
// one a third: more than most tests take. So a database a test is done with
// is handed to the next test instead, once it is as a fresh one is:
//
//   - an empty database (NewDatabase) loses every schema, its objects with
//     it, and gets an empty public schema back;
//   - a migrated database (NewMigratedDatabase) keeps its schema and loses
//     its rows: the tables that its migration left empty are truncated.
//
// Either way the database is then compared with a fresh one of its kind (a
// fingerprint of its schemas, relations, functions, types, extensions,
// settings, and the rows of the tables the migration filled). A database
// that differs (a test altered the schema), or that a connection still uses
// after the test (a pool or a process left running), is dropped, as every
// database was before, and never reused.

// SchemaDB is the layout of migrated databases: its migration runs once per
// database that NewMigratedDatabase creates. Declare one per test package:
//
//	var plantsSchema = pgtest.NewSchema(func(ctx context.Context, url string) error { ... })
type SchemaDB struct {
	migrate func(ctx context.Context, url string) error
}

// NewSchema is a SchemaDB made by migrate, which brings the empty database
// at url to the layout the tests expect.
func NewSchema(migrate func(ctx context.Context, url string) error) *SchemaDB {
	return &SchemaDB{migrate: migrate}
}

// NewMigratedDatabase returns the URL of a database on the shared cluster
// with schema's layout and no rows in the tables its migration left empty.
// A test that changes the layout may use one (the database is then dropped
// rather than reused), but one that needs the migration itself to run uses
// NewDatabase.
func NewMigratedDatabase(t testing.TB, schema *SchemaDB) string {
	t.Helper()
	return Shared(t).NewMigratedDatabase(t, schema)
}

// NewMigratedDatabase is the package's NewMigratedDatabase on this cluster.
func (c *Cluster) NewMigratedDatabase(t testing.TB, schema *SchemaDB) string {
	t.Helper()
	if schema == nil {
		t.Fatal("pgtest: NewMigratedDatabase needs a schema")
	}
	return c.newDatabase(t, schema)
}

// reusePool holds a cluster's databases that tests are done with, by kind
// (the nil SchemaDB: empty), and what a fresh one of each kind looks like.
type reusePool struct {
	mu    sync.Mutex
	idle  map[*SchemaDB][]string
	fresh map[*SchemaDB]*freshState
}

// freshState is what a fresh database of a kind looks like.
type freshState struct {
	fingerprint string
	truncate    []string // the tables the migration left empty, quoted
	kept        []string // the tables it filled (schema_migrations), quoted
}

// take returns an idle database of the kind, if there is one.
func (p *reusePool) take(schema *SchemaDB) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idle := p.idle[schema]
	if len(idle) == 0 {
		return "", false
	}
	name := idle[len(idle)-1]
	p.idle[schema] = idle[:len(idle)-1]
	return name, true
}

func (p *reusePool) put(schema *SchemaDB, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[*SchemaDB][]string{}
	}
	p.idle[schema] = append(p.idle[schema], name)
}

func (p *reusePool) state(schema *SchemaDB) *freshState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fresh[schema]
}

// learn records what a fresh database of the kind looks like, from the
// first one made; later ones must look the same.
func (p *reusePool) learn(schema *SchemaDB, s *freshState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fresh == nil {
		p.fresh = map[*SchemaDB]*freshState{}
	}
	if p.fresh[schema] == nil {
		p.fresh[schema] = s
	}
}

// newDatabase hands the test a database of the kind, idle or new, and
// takes it back when the test ends.
func (c *Cluster) newDatabase(t testing.TB, schema *SchemaDB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	name, err := c.takeDatabase(ctx, schema)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		running := c.running
		c.mu.Unlock()
		if !running {
			return // a cluster the test left stopped is removed whole
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.reset(ctx, schema, name); err != nil {
			t.Logf("pgtest: database %s is dropped, not reused: %v", name, err)
			// FORCE: a pool the test did not close must not keep the database.
			if err := c.exec("DROP DATABASE " + name + " WITH (FORCE)"); err != nil {
				t.Errorf("pgtest: drop database: %v", err)
			}
			return
		}
		c.reuse.put(schema, name)
	})
	return c.URL(name)
}

// takeDatabase returns an idle database of the kind, or makes one.
func (c *Cluster) takeDatabase(ctx context.Context, schema *SchemaDB) (string, error) {
	if name, ok := c.reuse.take(schema); ok {
		return name, nil
	}
	var name string
	var err error
	if schema == nil {
		name, err = c.CreateDatabase()
	} else {
		name, err = c.takeDatabase(ctx, nil)
	}
	if err != nil {
		return "", err
	}
	if err := c.makeFresh(ctx, schema, name); err != nil {
		return "", errors.Join(err, c.exec("DROP DATABASE "+name+" WITH (FORCE)"))
	}
	return name, nil
}

// makeFresh migrates a new database of a schema, and learns from the first
// database of its kind what a fresh one looks like.
func (c *Cluster) makeFresh(ctx context.Context, schema *SchemaDB, name string) error {
	url := c.URL(name)
	if schema != nil {
		if err := schema.migrate(ctx, url); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	if c.reuse.state(schema) != nil {
		return nil
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	s := &freshState{}
	if schema != nil {
		rows, _ := conn.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND `+userNamespace+` ORDER BY 1, 2`)
		tables, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
			var nsp, rel string
			err := row.Scan(&nsp, &rel)
			return pgx.Identifier{nsp, rel}.Sanitize(), err
		})
		if err != nil {
			return fmt.Errorf("list tables: %w", err)
		}
		for _, table := range tables {
			var filled bool
			if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+table+")").Scan(&filled); err != nil {
				return fmt.Errorf("look into %s: %w", table, err)
			}
			if filled {
				s.kept = append(s.kept, table)
			} else {
				s.truncate = append(s.truncate, table)
			}
		}
	}
	if s.fingerprint, err = fingerprint(ctx, conn, s.kept); err != nil {
		return err
	}
	c.reuse.learn(schema, s)
	return nil
}

// userNamespace is an SQL condition on n, a pg_namespace row: a schema of
// the database's own, not the system's.
const userNamespace = `n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname !~ '^pg_(toast_)?temp_'`

// fingerprintSQL describes what a test may have changed in a database
// that deleting its rows does not undo.
const fingerprintSQL = `SELECT concat_ws(E'\n',
  (SELECT string_agg(format('schema %s owner %s acl %s comment %s', nspname, nspowner::regrole, nspacl, obj_description(oid, 'pg_namespace')), E'\n' ORDER BY nspname)
     FROM pg_namespace n WHERE nspname <> 'pg_toast' AND nspname !~ '^pg_(toast_)?temp_'),
  (SELECT string_agg(format('relation %s.%s %s', n.nspname, c.relname, c.relkind), E'\n' ORDER BY n.nspname, c.relname)
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ` + userNamespace + `),
  (SELECT string_agg(format('function %s', p.oid::regprocedure), E'\n' ORDER BY p.oid::regprocedure::text)
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ` + userNamespace + `),
  (SELECT format('types %s', count(*)) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE ` + userNamespace + `),
  (SELECT string_agg(format('extension %s %s', extname, extversion), E'\n' ORDER BY extname) FROM pg_extension),
  (SELECT format('settings %s', count(*)) FROM pg_db_role_setting
     WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())),
  (SELECT format('large objects %s', count(*)) FROM pg_largeobject_metadata),
  (SELECT format('event triggers %s', count(*)) FROM pg_event_trigger),
  (SELECT format('publications %s', count(*)) FROM pg_publication))`

// fingerprint describes the database conn is connected to, with the number
// of rows of each of the kept tables.
func fingerprint(ctx context.Context, conn *pgx.Conn, kept []string) (string, error) {
	var fp string
	if err := conn.QueryRow(ctx, fingerprintSQL).Scan(&fp); err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	for _, table := range kept {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			return "", fmt.Errorf("fingerprint: %w", err)
		}
		fp += fmt.Sprintf("\nrows %s %d", table, n)
	}
	return fp, nil
}

// emptySQL removes every schema, and every object with it, and makes an
// empty public schema as initdb does (PostgreSQL 15 and later; on an older
// server the fingerprint differs and the database is dropped instead).
const emptySQL = `DO $$
DECLARE s name;
BEGIN
  FOR s IN SELECT nspname FROM pg_namespace n WHERE ` + userNamespace + ` LOOP
    EXECUTE format('DROP SCHEMA %I CASCADE', s);
  END LOOP;
END $$;
CREATE SCHEMA public AUTHORIZATION pg_database_owner;
GRANT USAGE ON SCHEMA public TO PUBLIC;
COMMENT ON SCHEMA public IS 'standard public schema'`

// connectionsGone bounds the wait for the test's connections to end: a
// closed pool's server processes exit a moment after the pool returns.
const connectionsGone = 2 * time.Second

// reset makes a database a test is done with as a fresh one of its kind,
// or says why it cannot.
func (c *Cluster) reset(ctx context.Context, schema *SchemaDB, name string) error {
	fresh := c.reuse.state(schema)
	if fresh == nil {
		return errors.New("no fresh database of its kind to compare with")
	}
	conn, err := pgx.Connect(ctx, c.URL(name))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	// Another connection after the test means something of the test still
	// runs, which could write into the next test's database.
	err = poll.Until(ctx, 5*time.Millisecond, connectionsGone, func() (bool, error) {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&others); err != nil {
			return false, poll.Stop(err)
		}
		return others == 0, fmt.Errorf("%d connections still use it", others)
	})
	if err != nil {
		return err
	}
	// One statement list, one transaction, and no wait for the disk: the
	// tests' own commits wait for it, pgtest's bookkeeping need not.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off"); err != nil {
		return err
	}
	reset := "ALTER DATABASE " + pgx.Identifier{name}.Sanitize() + " RESET ALL;\n"
	if schema == nil {
		reset += emptySQL
	} else if len(fresh.truncate) > 0 {
		reset += "TRUNCATE " + strings.Join(fresh.truncate, ", ") + " RESTART IDENTITY"
	}
	if _, err := conn.Exec(ctx, reset); err != nil {
		return err
	}
	fp, err := fingerprint(ctx, conn, fresh.kept)
	if err != nil {
		return err
	}
	if fp != fresh.fingerprint {
		return fmt.Errorf("it differs from a fresh one: %s", difference(fp, fresh.fingerprint))
	}
	return nil
}

// difference lists the lines of one fingerprint that the other lacks.
func difference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var lines []string
	for _, l := range g {
		if !slices.Contains(w, l) {
			lines = append(lines, "+"+l)
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			lines = append(lines, "-"+l)
		}
	}
	return strings.Join(lines, "; ")
}
