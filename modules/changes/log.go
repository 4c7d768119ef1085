package changes

import (
	"context"
	"errors"
	"time"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Cursor is a position in a store's change log: the changes after it are
// the ones a follower has not seen. Cursors of one history are totally
// ordered (Tx, then Version) and the same on every replica of a postgres
// store. Tx is the committing transaction's id on postgres (a change is
// shown once every transaction that could commit before it has ended, so
// none appears behind a cursor already given out), and zero on a store
// whose commits are serial (bolt, memory), which orders by Version alone.
// History names the store's history the cursor belongs to (see
// history.go): a store answers only its own. The zero Cursor, of no
// history, is before every change of any store.
type Cursor struct {
	History uint64
	Tx      uint64
	Version int64
}

// Less reports whether c is before d, two cursors of one history.
func (c Cursor) Less(d Cursor) bool {
	if c.Tx != d.Tx {
		return c.Tx < d.Tx
	}
	return c.Version < d.Version
}

// Record is one committed change as the log keeps it.
type Record struct {
	Cursor  Cursor
	Kind    Kind
	Version int64 // as Committed.Version: of one plant, increasing
	// Plant is the plant after the change; for Deleted, its ID only.
	Plant plant.Plant
	At    time.Time // the commit's time
}

// ChangeLog is a store's log of every change it commits, written in the
// change's own commit, kept for the retention window. It serves the change
// feed (GET /plants/changes) and is what a follower resumes from.
type ChangeLog interface {
	// Changes returns at most limit changes after the cursor, oldest first.
	// A change is returned only once it is as durable as a read's answer
	// (see the stores' read barriers), so a follower never sees what a
	// fault can take back. A cursor older than the retention window fails
	// with ErrCursorGone.
	Changes(ctx context.Context, after Cursor, limit int) ([]Record, error)
	// Head is the cursor of the newest change Changes can return now: a
	// listing read after Head was taken, then the changes after it, miss
	// nothing.
	Head(ctx context.Context) (Cursor, error)
	// Wait returns a channel closed at the next commit of a change by this
	// process or, on postgres, by any replica (best effort: a follower also
	// polls). Each call returns the channel for the next commit.
	Wait() <-chan struct{}
	// PruneChanges removes the changes committed before before and returns
	// how many. A cursor before the newest removed one is gone, the zero
	// Cursor too once anything was removed (a follower from it would miss
	// the removed changes); one at it is not: it has seen every change
	// removed, and none after it was (so Head stays a cursor to follow from
	// when every change was removed).
	PruneChanges(ctx context.Context, before time.Time) (int, error)
	// Snapshotter reads the plants as a position of this log left them:
	// the change feed's snapshot, then the changes after it.
	Snapshotter
}

// PruneInterval is how often a store prunes what it keeps for a retention:
// a tenth of it, at most a minute (and at least a millisecond, a ticker's
// need), so that nothing outlives its window by more than a tenth of it.
func PruneInterval(retention time.Duration) time.Duration {
	return max(min(retention/10, time.Minute), time.Millisecond)
}

// ErrCursorGone means the cursor is older than the retention window: the
// changes after it were pruned. The follower lists again and follows from
// the listing's cursor.
var ErrCursorGone = errors.New("changes: the cursor is older than the change log's retention window")
