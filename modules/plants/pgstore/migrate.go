package pgstore

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The schema's history: numbered SQL files, applied in order, each once, in
// a transaction of its own. A released file is never edited; a change is a
// new file. A few lines of our own instead of a migration library: the ones
// that fit (tern, goose, golang-migrate) bring CLI and template dependencies
// for what is a loop over embedded files.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the advisory lock that serializes migrations across
// replicas starting at once: "plants" in ASCII. Advisory locks are per
// database, so stores on different databases do not wait for each other.
const migrationLockKey int64 = 0x706c616e7473

type migration struct {
	version int64
	name    string // the file name, recorded with the version
	sql     string
}

// Migrate brings the database's schema up to date. Several processes may
// call it at once: each takes a session advisory lock on a connection of its
// own, so one applies the missing migrations while the others wait, then
// find nothing left to do. Closing that connection releases the lock
// whatever happened, even if this process dies midway. ctx bounds the whole
// (the wait for the lock included); a database that cannot be reached fails
// it with plant.ErrUnavailable.
func (s *Store) Migrate(ctx context.Context) error {
	migrations, err := loadMigrations(migrationFiles)
	if err != nil {
		return err
	}
	cfg := s.migrateConfig.Copy()
	_ = noCancel(s.closing)(ctx, cfg) // a connection of its own, that sends no cancel request either
	if err := migrate(ctx, cfg, migrations); err != nil {
		return err
	}
	return s.openHistory(ctx)
}

func migrate(ctx context.Context, cfg *pgx.ConnConfig, migrations []migration) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		// The first contact with the database: name the setting to check.
		return failed("migrate (--postgres-url)", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return failed("migrate: take the migration lock", err)
	}
	// Created under the lock: CREATE TABLE IF NOT EXISTS is not safe against
	// itself in concurrent sessions.
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    bigint      PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return failed("migrate: create schema_migrations", err)
	}
	rows, _ := conn.Query(ctx, "SELECT version FROM schema_migrations")
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return failed("migrate: read schema_migrations", err)
	}
	for _, m := range migrations {
		if slices.Contains(applied, m.version) {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return failed("migrate: apply "+m.name, err)
		}
	}
	// Closing the connection would release the lock too; unlocking says so.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrationLockKey); err != nil {
		return failed("migrate: release the migration lock", err)
	}
	return nil
}

// loadMigrations reads the migrations/NNNN_name.sql files of fsys in
// version order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, file := range files {
		name := path.Base(file)
		digits, _, ok := strings.Cut(name, "_")
		version, err := strconv.ParseInt(digits, 10, 64)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("postgres: migration %s: want a name like 0001_what_it_does.sql", name)
		}
		sql, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: version, name: name, sql: string(sql)})
	}
	slices.SortFunc(out, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("postgres: migrations %s and %s share a version", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}
