package pgstore

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A snapshot page (changes.Snapshotter) is read in one REPEATABLE READ
// transaction: the plants, the log's head and the transaction's snapshot
// (pg_current_snapshot) are all of one moment. Two things can still set
// the page apart from its head, and each is checked, the page read again
// when one holds:
//
//   - The head is the newest change of a transaction below the snapshot's
//     xmin (see changelog.go), but a younger transaction that committed
//     before the snapshot, while an older one still ran, is visible in the
//     plants and comes after the head in the feed: it would be given twice.
//     Every change upserts its plant's row in plant_heads with its tx, so a
//     visible plant_heads row of the page's id range with a tx at or above
//     xmin says so.
//   - Versions are drawn in time, not in transaction order: a transaction
//     in progress at the snapshot may have drawn a version below one the
//     page shows. The page's version must be at least every version the
//     page shows, and below every version of a change it does not. The
//     store keeps a watermark (settledVersions): a transaction id X and a
//     version M such that every change of a transaction below X has a
//     version up to M, and every transaction that drew a version up to M
//     has ended. The page's version is the greater of M and the greatest
//     version visible from a transaction at or above X; it is given only
//     once every transaction in progress at the snapshot has ended (the
//     page's transaction takes an id of its own after the snapshot, which
//     every one of them is below: once the xmin passes it, they have all
//     ended; the snapshot's own list leaves out those with an id past the
//     newest ended one) and none of their changes has a version at or
//     below it. The page's version and xmin are then the next watermark.
//     Transactions that start later draw greater versions.
//
// Both are rare (an out-of-order commit, or an interleaving of two
// versions' draws, at the moment of the read), and a read again is a few
// milliseconds. The first watermark is taken with a fence: the store takes
// a transaction id, waits for every transaction below it to end, then
// reads the sequence. Like the feed, a page waits for the transactions in
// progress at its read to end: a transaction left open on the server holds
// snapshots back as it holds the feed.
const (
	// fenceSQL takes a transaction id (its transaction commits at once):
	// every transaction in progress has a smaller one.
	fenceSQL = `SELECT pg_current_xact_id()::text`
	// sequenceSQL reads the versions' sequence: at least every version
	// drawn so far.
	sequenceSQL = `SELECT last_value FROM plant_versions`
	// snapshotStateSQL, in the page's transaction after the plants: the
	// snapshot; whether a plant of the id range [$1, $2] has a visible
	// change at or above its xmin; and the greatest version visible from a
	// transaction at or above $3 (the watermark's); its xmin; and an id
	// for the transaction, past every transaction's in progress.
	snapshotStateSQL = `SELECT pg_current_snapshot()::text,
  EXISTS (SELECT FROM plant_heads WHERE plant_id BETWEEN $1 AND $2 AND tx >= pg_snapshot_xmin(pg_current_snapshot())),
  (SELECT max(version) FROM plant_changes WHERE tx >= $3::text::xid8),
  pg_snapshot_xmin(pg_current_snapshot())::text,
  pg_current_xact_id()::text`
	// snapshotEndedSQL says whether every transaction with an id below
	// $1 has ended.
	snapshotEndedSQL = `SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::text::xid8`
	// snapshotLaterSQL is the least version of a change the snapshot $1
	// does not see.
	snapshotLaterSQL = `SELECT min(version) FROM plant_changes
WHERE tx >= pg_snapshot_xmin($1::text::pg_snapshot) AND NOT pg_visible_in_snapshot(tx, $1::text::pg_snapshot)`
)

// snapshotRetry bounds the pause between two reads of a page, and
// between two looks for the end of the transactions it waits for.
const (
	snapshotRetryFirst   = time.Millisecond
	snapshotRetryLongest = 20 * time.Millisecond
)

// errSnapshotMoved says that a page's read met a change it cannot place
// (see above): it is read again.
var errSnapshotMoved = errors.New("pgstore: a change committed out of order at the snapshot's read")

// Snapshot implements changes.Snapshotter (see above). The whole, its
// reads again included, is bounded by the call deadline.
func (s *Store) Snapshot(ctx context.Context, q changes.SnapshotQuery) (changes.Snapshot, error) {
	if q.Limit <= 0 {
		return changes.Snapshot{}, errors.New("pgstore: snapshot limit is not positive")
	}
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	from := int64(math.MinInt64)
	if q.After != nil {
		if *q.After == math.MaxInt64 {
			head, err := s.Head(ctx)
			return changes.Snapshot{Plants: []plant.Plant{}, Head: head, Version: head.Version}, err
		}
		from = *q.After + 1
	}
	pause := snapshotRetryFirst
	for {
		var snap changes.Snapshot
		err := s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			var err error
			snap, err = s.snapshotPage(ctx, conn, q, from)
			if err == nil {
				err = barrier(ctx, conn)
			}
			return err
		})
		if !errors.Is(err, errSnapshotMoved) {
			if err != nil {
				return changes.Snapshot{}, failed("snapshot", err)
			}
			return snap, nil
		}
		if err := sleep(ctx, pause); err != nil {
			return changes.Snapshot{}, failed("snapshot", err)
		}
		pause = min(2*pause, snapshotRetryLongest)
	}
}

// snapshotPage reads one page on conn; errSnapshotMoved when it must be
// read again.
func (s *Store) snapshotPage(ctx context.Context, conn *pgx.Conn, q changes.SnapshotQuery, from int64) (changes.Snapshot, error) {
	history := s.History()
	mark, err := s.settled.get(ctx, conn)
	if err != nil {
		return changes.Snapshot{}, err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadWrite})
	if err != nil {
		return changes.Snapshot{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	sql, args := listSQL, []any{q.Limit, from}
	if q.Tag != nil {
		sql, args = listTagSQL, []any{q.Limit, *q.Tag, from}
	}
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return changes.Snapshot{}, err
	}
	plants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (plant.Plant, error) {
		var p plant.Plant
		err := row.Scan(&p.ID, &p.Name, &p.Tag)
		return p, err
	})
	if err != nil {
		return changes.Snapshot{}, err
	}
	// The page covers the ids up to its last plant, or every id after
	// from when it is not full.
	to := int64(math.MaxInt64)
	if len(plants) == q.Limit {
		to = plants[len(plants)-1].ID
	}
	var (
		snapshot, fence string
		xmin            string
		moved           bool
		visibleVersion  *int64
		headTx, prunedT *string
		headV, prunedV  *int64
	)
	if err := tx.QueryRow(ctx, snapshotStateSQL, from, to, mark.tx).Scan(&snapshot, &moved, &visibleVersion, &xmin, &fence); err != nil {
		return changes.Snapshot{}, err
	}
	if moved {
		return changes.Snapshot{}, errSnapshotMoved
	}
	if err := tx.QueryRow(ctx, headSQL).Scan(&headTx, &headV, &prunedT, &prunedV); err != nil {
		return changes.Snapshot{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return changes.Snapshot{}, err
	}
	head, pruned := changes.Cursor{History: history}, changes.Cursor{History: history}
	if headTx != nil {
		if head, err = cursorOf(history, *headTx, *headV); err != nil {
			return changes.Snapshot{}, err
		}
	}
	if prunedT != nil {
		if pruned, err = cursorOf(history, *prunedT, *prunedV); err != nil {
			return changes.Snapshot{}, err
		}
	}
	if head.Less(pruned) {
		head = pruned
	}
	version := mark.version
	if visibleVersion != nil {
		version = max(version, *visibleVersion)
	}
	if err := waitEnded(ctx, conn, fence); err != nil {
		return changes.Snapshot{}, err
	}
	var later *int64
	if err := conn.QueryRow(ctx, snapshotLaterSQL, snapshot).Scan(&later); err != nil {
		return changes.Snapshot{}, err
	}
	if later != nil && *later <= version {
		return changes.Snapshot{}, errSnapshotMoved
	}
	s.settled.advance(watermark{tx: xmin, version: version})
	return changes.Snapshot{Plants: plants, Head: head, Version: version}, nil
}

// waitEnded returns once every transaction with an id below fence has
// ended.
func waitEnded(ctx context.Context, conn *pgx.Conn, fence string) error {
	pause := snapshotRetryFirst
	for {
		var ended bool
		if err := conn.QueryRow(ctx, snapshotEndedSQL, fence).Scan(&ended); err != nil || ended {
			return err
		}
		if err := sleep(ctx, pause); err != nil {
			return err
		}
		pause = min(2*pause, snapshotRetryLongest)
	}
}

// sleep pauses d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watermark is a transaction id (as text) and a version: every change of
// a transaction below tx has a version up to version, and every
// transaction that drew a version up to it has ended.
type watermark struct {
	tx      string
	version int64
}

// settledVersions is the store's newest watermark, taken with a fence at
// the first snapshot and moved on by each page read.
type settledVersions struct {
	mu   sync.Mutex
	mark watermark
	txID uint64 // mark.tx's value, to keep the newest
}

// get returns the watermark, taking the first on conn.
func (v *settledVersions) get(ctx context.Context, conn *pgx.Conn) (watermark, error) {
	v.mu.Lock()
	mark := v.mark
	v.mu.Unlock()
	if mark.tx != "" {
		return mark, nil
	}
	var fence string
	if err := conn.QueryRow(ctx, fenceSQL).Scan(&fence); err != nil {
		return watermark{}, err
	}
	if err := waitEnded(ctx, conn, fence); err != nil {
		return watermark{}, err
	}
	mark.tx = fence
	if err := conn.QueryRow(ctx, sequenceSQL).Scan(&mark.version); err != nil {
		return watermark{}, err
	}
	v.advance(mark)
	return mark, nil
}

// advance keeps mark when it is newer than the one kept.
func (v *settledVersions) advance(mark watermark) {
	id, err := strconv.ParseUint(mark.tx, 10, 64)
	if err != nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if id > v.txID {
		v.mark, v.txID = mark, id
	}
}
