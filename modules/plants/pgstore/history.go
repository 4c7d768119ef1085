package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The database's history (see changes/history.go). Its id is the one row of
// plant_history (migration 0005), read at each Migrate, which every
// replica runs at its start. The history is the database's, not a
// process's: every replica gives the same cursors. At each start the
// version sequence also moves up to the database clock's microseconds, so
// that a restored copy of the database (pg_restore, a point-in-time
// recovery), once its replicas start, gives no version and no cursor the
// lost changes were given.
//
// A log restored into another cluster (pg_dump, then pg_restore on a new
// server) holds the transaction ids of the cluster it was dumped from,
// which order the feed and decide what it shows. When they are ahead of
// this cluster's, the feed would hide them and put every new change before
// them; so the start moves them back below every transaction of this
// cluster (the log's order within a plant is its versions', and stays).
// A follower's cursor of the old cluster is then held nowhere: it is told
// to list again.

const (
	historySQL = `SELECT id FROM plant_history`
	// foreignTxSQL says whether the log holds a transaction id this
	// cluster has not given yet.
	foreignTxSQL = `WITH next AS (SELECT pg_snapshot_xmax(pg_current_snapshot()) AS x)
SELECT EXISTS (SELECT FROM plant_changes, next WHERE tx >= next.x)
    OR EXISTS (SELECT FROM plant_changes_pruned, next WHERE tx >= next.x)
    OR EXISTS (SELECT FROM plant_heads, next WHERE tx >= next.x)`
	// lockLogSQL waits for the changes in flight and holds off new ones,
	// of every replica (a change writes plant_changes, which takes a lock
	// this mode conflicts with), and any other move, until the move's
	// transaction ends.
	lockLogSQL = `LOCK TABLE plant_changes IN SHARE ROW EXCLUSIVE MODE`
	// moveBackSQL moves the log's transaction ids below every one of this
	// cluster (3 is the frozen transaction's) if the log still holds one
	// this cluster has not given, read in the statement's snapshot, taken
	// under lockLogSQL: a replica that started meanwhile moved them
	// already, and its changes since carry this cluster's ids, which stay.
	// The plant heads, needed only while a change is in flight, go. It
	// says whether it moved.
	moveBackSQL = `WITH foreign_tx AS (` + foreignTxSQL + ` AS yes),
moved AS (UPDATE plant_changes SET tx = '3' WHERE (SELECT yes FROM foreign_tx)),
pruned AS (UPDATE plant_changes_pruned SET tx = '3' WHERE (SELECT yes FROM foreign_tx)),
heads AS (DELETE FROM plant_heads WHERE (SELECT yes FROM foreign_tx))
SELECT yes FROM foreign_tx`
	// seedVersionsSQL moves the version sequence up to the clock's
	// microseconds minus one, so that the next version is the clock's,
	// unless it is there already. A replica's nextval between the read of
	// last_value and the setval is not moved under: its version is below
	// the clock's microseconds, unless the store gives more than a million
	// versions a second.
	seedVersionsSQL = `WITH floor AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint - 1 AS v)
SELECT setval('plant_versions', floor.v) FROM floor, plant_versions WHERE plant_versions.last_value < floor.v`
)

// openHistory reads the database's history id, moves a log of a cluster
// ahead back and the version sequence up to the clock.
func (s *Store) openHistory(ctx context.Context) error {
	var id int64
	if err := s.pool.QueryRow(ctx, historySQL).Scan(&id); err != nil {
		return failed("read the history id", err)
	}
	var foreign bool
	if err := s.pool.QueryRow(ctx, foreignTxSQL).Scan(&foreign); err != nil {
		return failed("read the log's transaction ids", err)
	}
	if foreign {
		if err := s.moveBack(ctx); err != nil {
			return err
		}
	}
	if _, err := s.pool.Exec(ctx, seedVersionsSQL); err != nil {
		return failed("move the versions past the clock", err)
	}
	s.history.Store(uint64(id)) //nolint:gosec // G115: a positive bigint (the table's CHECK)
	return nil
}

// moveBack moves a log of a cluster ahead back (moveBackSQL) under
// lockLogSQL. The look at the log before it (foreignTxSQL) saw it ahead
// without the lock, and so at most says that a move may be due: another
// replica starting at once may have moved it since, and written changes of
// this cluster after it, which a move would hide from the followers that
// saw them. It runs on a connection of its own, as the migrations do, with
// no statement timeout: a restored log may be long to rewrite, and a
// statement timeout would fail every start.
func (s *Store) moveBack(ctx context.Context) error {
	cfg := s.migrateConfig.Copy()
	_ = noCancel(s.closing)(ctx, cfg) // no cancel request, as Migrate's
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return failed("move the log's transaction ids", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockLogSQL); err != nil {
			return err
		}
		return tx.QueryRow(ctx, moveBackSQL).Scan(new(bool))
	})
	if err != nil {
		return failed("move the log's transaction ids", err)
	}
	return nil
}

// History is the database's history id, which the store's cursors carry;
// zero before Migrate.
func (s *Store) History() uint64 { return s.history.Load() }
