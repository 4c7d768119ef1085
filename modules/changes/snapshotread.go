package changes

import (
	"context"
	"time"
)

// A snapshot, then changes, read page by page (the change feed's
// snapshot=true): every current plant, then the changes after it, with no
// gap and nothing given twice while writers run, and resumable from any
// item. A single Snapshot page would do for a store small enough for one
// page; a larger one is read in pages of ids, each at a later head, and
// the changes made meanwhile to the plants already given are given between
// them:
//
//	page k+1 = the changes in (head k, head k+1] of the ids given so far,
//	           then the next plants by id, as head k+1 left them
//
// so that the plants of each id range are given as of one head and, from
// it on, every change of theirs, once. A page's plants carry the page's
// Snapshot.Version, which is past every change they show and below every
// change of theirs that follows: each plant's versions increase as a
// follower sees them. Once a page is not full, every id is covered: the
// snapshot is complete at that page's head, and the feed goes on from
// there.

// SnapshotPosition is where a snapshot being read stands.
type SnapshotPosition struct {
	// Cursor is the log's position up to which every change of the ids
	// given is in what was given.
	Cursor Cursor
	// Last is the greatest id given; nil before the first.
	Last *int64
}

// SnapshotItem is one item of a snapshot's page: a plant of the snapshot
// (Synthetic, a Created record of the page's version, at the page's head)
// or a change of an id given before it.
type SnapshotItem struct {
	Record    Record
	Synthetic bool
	// After is the position after this item: a reader resumes there.
	After SnapshotPosition
}

// SnapshotStep is one page of a snapshot being read.
type SnapshotStep struct {
	Items []SnapshotItem
	// Next is where the next page reads from. When Done, the snapshot is
	// complete and Next.Cursor is where the changes follow on from.
	Next SnapshotPosition
	Done bool
}

// snapshotBehindTries bounds the reads of a page whose head is behind the
// position's: a store's heads only go forward, so a position still ahead
// after them is not one this store gave.
const snapshotBehindTries = 3

// ReadSnapshot reads the page of a snapshot after from, of at most limit
// items (limit log records read, too), filtered by f: the snapshot's
// plants are those of f's tag; a change is given as f gives it (a plant
// leaving the tag is its deletion). now stamps the synthetic records.
func ReadSnapshot(ctx context.Context, log ChangeLog, from SnapshotPosition, f Filter, limit int, now time.Time) (SnapshotStep, error) {
	var snap Snapshot
	for try := 0; ; try++ {
		var err error
		if snap, err = log.Snapshot(ctx, SnapshotQuery{After: from.Last, Tag: f.Tag, Limit: limit}); err != nil {
			return SnapshotStep{}, err
		}
		if from.Last == nil || !snap.Head.Less(from.Cursor) {
			break
		}
		if from.Cursor.History != snap.Head.History || try == snapshotBehindTries {
			return SnapshotStep{}, ErrCursorUnknown
		}
	}
	var items []SnapshotItem
	pos := from
	if from.Last != nil {
		// The changes of the ids given, up to the page's head.
		recs, err := log.Changes(ctx, from.Cursor, limit)
		if err != nil {
			return SnapshotStep{}, err
		}
		for _, rec := range recs {
			if snap.Head.Less(rec.Cursor) {
				break
			}
			pos.Cursor = rec.Cursor
			if rec.Plant.ID > *from.Last {
				continue // the page's plants show it, or a later page's will
			}
			if rec, ok := f.Apply(rec); ok {
				items = append(items, SnapshotItem{Record: rec, After: pos})
			}
		}
		if pos.Cursor.Less(snap.Head) {
			// More changes than a page: the plants wait for the next one.
			return SnapshotStep{Items: items, Next: pos}, nil
		}
	}
	pos.Cursor = snap.Head
	plants, done := snap.Plants, len(snap.Plants) < limit
	if room := limit - len(items); len(plants) > room {
		plants, done = plants[:room], false
	}
	for _, p := range plants {
		pos.Last = &p.ID
		rec := Record{Cursor: snap.Head, Kind: Created, Version: snap.Version, Plant: p, At: now}
		if rec, ok := f.Apply(rec); ok {
			items = append(items, SnapshotItem{Record: rec, Synthetic: true, After: pos})
		}
	}
	return SnapshotStep{Items: items, Next: pos, Done: done}, nil
}
