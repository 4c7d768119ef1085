package pgstore

import (
	"context"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The change log (changes.ChangeLog) is the table plant_changes, which every
// change statement writes (see statement.go). A change is shown once every
// transaction that could commit before it has ended: its transaction id is
// below the reading snapshot's xmin. Transaction ids are assigned at a
// transaction's first write, not at its commit, so a change of an older
// transaction still open may commit after younger ones: shown in id order
// only once no older one is open, none of them ever lands behind a cursor
// given out. Cursors are (transaction id, version), the same on every
// replica. Transaction ids are the cluster's, so a write transaction left
// open anywhere on it, in another database too, holds the feed back until
// it ends.

const (
	// changesSQL reads the log after the cursor ($1 the transaction id as
	// text, $2 the version) in one snapshot with the pruned cursor: the
	// first column says whether the cursor is gone (before the newest
	// pruned change; any cursor once something was pruned, the zero one
	// included), the second whether it is unknown (not the start, a
	// change the log holds or the newest pruned one: see history.go), and
	// then no change is read. It answers one row at least.
	changesSQL = `WITH gone AS (
  SELECT EXISTS (SELECT FROM plant_changes_pruned WHERE ($1::text::xid8, $2::bigint) < (tx, version)) AS gone,
    NOT (($1::text::xid8, $2::bigint) = ('0'::xid8, 0::bigint)
      OR EXISTS (SELECT FROM plant_changes WHERE (tx, version) = ($1::text::xid8, $2::bigint))
      OR EXISTS (SELECT FROM plant_changes_pruned WHERE (tx, version) = ($1::text::xid8, $2::bigint))) AS unknown
)
SELECT gone.gone, gone.unknown, c.tx::text, c.version, c.kind, c.plant_id, c.name, c.tag, c.at
FROM gone LEFT JOIN LATERAL (
  SELECT * FROM plant_changes
  WHERE NOT gone.gone AND NOT gone.unknown AND (tx, version) > ($1::text::xid8, $2::bigint) AND tx < pg_snapshot_xmin(pg_current_snapshot())
  ORDER BY tx, version LIMIT $3
) c ON true
ORDER BY c.tx, c.version`
	// headSQL reads the newest change shown, and the newest pruned one:
	// when every change was pruned, that is the head. The newest change is
	// one row, ordered by the log's xid8 column; its text is made only
	// after the order (a bare "tx" in an ORDER BY names the select list's
	// column first, which as text would put "3" after "12469").
	headSQL = `SELECT h.tx::text, h.version, (SELECT tx::text FROM plant_changes_pruned), (SELECT version FROM plant_changes_pruned)
FROM (SELECT) one LEFT JOIN LATERAL (
  SELECT c.tx, c.version FROM plant_changes c
  WHERE c.tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY c.tx DESC, c.version DESC LIMIT 1
) h ON true`
	// pruneChangesSQL removes, of the $2 oldest changes in cursor order
	// (the log's index, an order that follows the commits' times), those
	// committed before $1, and keeps the newest removed cursor if it is
	// past the one kept. A change it leaves, younger than an older one
	// removed, stays until a later prune: a follower behind the pruned
	// cursor is told it is gone either way.
	pruneChangesSQL = `WITH oldest AS (
  SELECT tx, version FROM (SELECT tx, version, at FROM plant_changes ORDER BY tx, version LIMIT $2) o WHERE at < $1
), removed AS (
  DELETE FROM plant_changes c USING oldest WHERE (c.tx, c.version) = (oldest.tx, oldest.version)
  RETURNING c.tx, c.version
), newest AS (
  SELECT tx, version FROM removed ORDER BY tx DESC, version DESC LIMIT 1
), kept AS (
  INSERT INTO plant_changes_pruned (tx, version) SELECT tx, version FROM newest
  ON CONFLICT (one) DO UPDATE SET tx = excluded.tx, version = excluded.version
  WHERE (plant_changes_pruned.tx, plant_changes_pruned.version) < (excluded.tx, excluded.version)
)
SELECT count(*) FROM removed`
	// pruneHeadsSQL removes, of the $2 plant heads after plant $1 in id
	// order, those below every running transaction's id: any change to
	// come has a greater id of its own, whenever the test is made. It
	// returns the last id it read (NULL past the end) and how many it
	// removed.
	pruneHeadsSQL = `WITH page AS (
  SELECT plant_id FROM plant_heads WHERE plant_id > $1 ORDER BY plant_id LIMIT $2
), removed AS (
  DELETE FROM plant_heads h USING page
  WHERE h.plant_id = page.plant_id AND h.tx < pg_snapshot_xmin(pg_current_snapshot())
  RETURNING h.plant_id
)
SELECT (SELECT max(plant_id) FROM page), (SELECT count(*) FROM removed)`
	// notifyChannel is the channel notified at every change (see notifySQL).
	notifyChannel = "plantstore_changes"
)

// pruneBatch bounds the rows one pruning statement removes, so that a
// prune after a long pause is many short statements rather than one long
// one holding its locks.
const pruneBatch = 1000

// Changes implements changes.ChangeLog. Like a read, it waits for a read
// barrier (see readbarrier.go): with synchronous standbys, a change is
// returned only once they hold it.
func (s *Store) Changes(ctx context.Context, after changes.Cursor, limit int) ([]changes.Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	history := s.History()
	if after != (changes.Cursor{}) && after.History != history {
		return nil, changes.ErrCursorUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	var recs []changes.Record
	gone, unknown := false, false
	err := s.read(ctx, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var (
			tx      *string
			version *int64
			kind    *int16
			name    *string
			r       changes.Record
			at      *time.Time
			id      *int64
		)
		_, err = pgx.ForEachRow(rows, []any{&gone, &unknown, &tx, &version, &kind, &id, &name, &r.Plant.Tag, &at}, func() error {
			if tx == nil {
				return nil // the row that says the cursor is gone, or that nothing follows it
			}
			c, err := cursorOf(history, *tx, *version)
			if err != nil {
				return err
			}
			r.Cursor, r.Version, r.Kind, r.Plant.ID, r.At = c, *version, changes.Kind(*kind), *id, *at //nolint:gosec // G115: a kind the store wrote
			if name != nil {
				r.Plant.Name = *name
			}
			recs = append(recs, r)
			r.Plant = plant.Plant{} // the next record's tag gets a pointer of its own
			return nil
		})
		return err
	}, changesSQL, strconv.FormatUint(after.Tx, 10), after.Version, limit)
	if err != nil {
		return nil, failed("changes", err)
	}
	switch {
	case gone:
		return nil, changes.ErrCursorGone
	case unknown:
		return nil, changes.ErrCursorUnknown
	}
	return recs, nil
}

// cursorOf reads a cursor of history from its transaction id's text.
func cursorOf(history uint64, tx string, version int64) (changes.Cursor, error) {
	id, err := strconv.ParseUint(tx, 10, 64)
	return changes.Cursor{History: history, Tx: id, Version: version}, err
}

// Head implements changes.ChangeLog: the newest change shown, or when every
// change was pruned the newest pruned one (a cursor at it is not gone).
// It runs with the read barrier, as Changes does: a cursor handed out is
// never one of a commit a failover can take back.
func (s *Store) Head(ctx context.Context) (changes.Cursor, error) {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	history := s.History()
	head, pruned := changes.Cursor{History: history}, changes.Cursor{History: history}
	err := s.read(ctx, func(br pgx.BatchResults) error {
		var tx, prunedTx *string
		var version, prunedVersion *int64
		if err := br.QueryRow().Scan(&tx, &version, &prunedTx, &prunedVersion); err != nil {
			return err
		}
		var err error
		if tx != nil {
			head, err = cursorOf(history, *tx, *version)
		}
		if err == nil && prunedTx != nil {
			pruned, err = cursorOf(history, *prunedTx, *prunedVersion)
		}
		return err
	}, headSQL)
	if err != nil {
		return changes.Cursor{}, failed("changes head", err)
	}
	if head.Less(pruned) {
		return pruned, nil
	}
	return head, nil
}

// Wait implements changes.ChangeLog: the channel closes at the next change
// this process commits, or one any replica commits whose notification the
// store's listener (see Start) hears.
func (s *Store) Wait() <-chan struct{} { return s.changed.Wait() }

// PruneChanges implements changes.ChangeLog, in statements of at most
// pruneBatch changes, the oldest first.
func (s *Store) PruneChanges(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int
		if err := s.pool.QueryRow(ctx, pruneChangesSQL, before, pruneBatch).Scan(&n); err != nil {
			return total, failed("prune changes", err)
		}
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}

// pruneHeads removes the plant heads no change to come needs, in
// statements of at most pruneBatch heads, and says how many it removed.
func (s *Store) pruneHeads(ctx context.Context) (int, error) {
	total := 0
	var after int64 = math.MinInt64
	for {
		var last *int64
		var n int
		if err := s.pool.QueryRow(ctx, pruneHeadsSQL, after, pruneBatch).Scan(&last, &n); err != nil {
			return total, failed("prune plant heads", err)
		}
		total += n
		if last == nil {
			return total, nil
		}
		after = *last
	}
}

// backgroundTasks are the goroutines Start spawns for the change log's
// followers: the listener and the notifier. Close stops them.
type backgroundTasks struct {
	once    sync.Once
	stopped sync.Once
	cancel  context.CancelFunc
	done    sync.WaitGroup
	listens atomic.Int64 // LISTEN connections the listener made: see Stats
}

// startBackground spawns the listener and the notifier, once.
func (s *Store) startBackground() {
	s.background.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.background.cancel = cancel
		s.background.done.Go(func() { s.listen(ctx) })
		s.background.done.Go(func() { s.notify(ctx) })
	})
}

// stop ends the background tasks and waits for them; a store never started
// has none.
func (b *backgroundTasks) stop() {
	b.once.Do(func() {}) // no start after a stop
	b.stopped.Do(func() {
		if b.cancel != nil {
			b.cancel()
		}
		b.done.Wait()
	})
}

// listenRetry is the wait before the listener connects again after its
// connection failed: followers poll meanwhile.
const listenRetry = time.Second

// listen holds one connection, outside the pool, listening on
// notifyChannel, and wakes the store's waiters at each notification (every
// replica's notifier sends one after its changes commit: see notify). It
// reconnects when the connection fails; once connected it wakes the
// waiters, who may have missed a change meanwhile.
func (s *Store) listen(ctx context.Context) {
	for ctx.Err() == nil {
		_ = s.listenOnce(ctx) // a failure's news is the next attempt; followers poll meanwhile
		select {
		case <-ctx.Done():
		case <-time.After(listenRetry):
		}
	}
}

// listenOnce listens on one connection until it fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context) error {
	cfg := s.migrateConfig.Copy()
	cfg.RuntimeParams["application_name"] += " listener"
	_ = noCancel(ctx)(ctx, cfg) // a connection that sends no cancel request, closed when ctx ends
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	s.changed.Wake()
	s.background.listens.Add(1)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		s.changed.Wake()
	}
}

// headsPruneInterval is how often the pruner runs without a retention:
// the change log and the outbox keep everything then, but the plant heads
// no change to come needs are still removed.
const headsPruneInterval = time.Minute

// startPruner spawns the pruner (see prune): every tenth of the retention,
// or every headsPruneInterval without one.
func (s *Store) startPruner() {
	every := headsPruneInterval
	if s.retention > 0 {
		every = changes.PruneInterval(s.retention)
	}
	s.pruner.Start(every, s.prune)
}

// prune removes the plant heads no change to come needs and, with a
// retention, the change log's records and the outbox's delivered events
// older than the retention at now.
func (s *Store) prune(ctx context.Context, now time.Time) {
	// A failure is retried at the next tick: what is left to prune waits,
	// and takes nothing from anyone meanwhile.
	before := now.Add(-s.retention)
	if s.retention > 0 {
		_, _ = s.PruneChanges(ctx, before)
	}
	_, _ = s.pruneHeads(ctx)
	if s.retention > 0 {
		_, _ = s.Outbox().Prune(ctx, before)
	}
}
