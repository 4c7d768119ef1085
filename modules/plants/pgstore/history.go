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
	// rebaseTxSQL moves the log's transaction ids below every one of this
	// cluster (3 is the frozen transaction's); the plant heads, needed
	// only while a change is in flight, go.
	rebaseTxSQL = `UPDATE plant_changes SET tx = '3';
UPDATE plant_changes_pruned SET tx = '3';
DELETE FROM plant_heads`
	// seedVersionsSQL moves the version sequence up to the clock's
	// microseconds minus one, so that the next version is the clock's,
	// unless it is there already. A replica's nextval between the read of
	// last_value and the setval is not moved under: its version is below
	// the clock's microseconds, unless the store gives more than a million
	// versions a second.
	seedVersionsSQL = `WITH floor AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint - 1 AS v)
SELECT setval('plant_versions', floor.v) FROM floor, plant_versions WHERE plant_versions.last_value < floor.v`
)

// openHistory reads the database's history id and moves the version
// sequence up to the clock.
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
		// One simple-protocol call: the three statements in one
		// transaction.
		if _, err := s.pool.Exec(ctx, rebaseTxSQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			return failed("move the log's transaction ids", err)
		}
	}
	if _, err := s.pool.Exec(ctx, seedVersionsSQL); err != nil {
		return failed("move the versions past the clock", err)
	}
	s.history.Store(uint64(id)) //nolint:gosec // G115: a positive bigint (the table's CHECK)
	return nil
}

// History is the database's history id, which the store's cursors carry;
// zero before Migrate.
func (s *Store) History() uint64 { return s.history.Load() }
