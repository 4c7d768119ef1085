package changestest

import (
	"errors"
	"testing"

	"github.com/plantstore/plantstore/modules/changes"
)

// A cursor is answered only at a position of the store's own history: its
// start, a change its log holds, or its newest pruned change. One of
// another store (another history id), one ahead of the head (what a copy
// restored from a backup is asked by a follower that saw the changes made
// after the backup), and one between two changes, which no store gave,
// are ErrCursorUnknown, never an empty page. The zero cursor is the start
// of any store's log.
func testCursorsOfAnotherHistoryAreRefused(t *testing.T, s Subject) {
	start := head(t, s.Changes)
	wantRecords(t, "after the start of a new store", read(t, s.Changes, start, 10), nil)
	var want []Step
	for id := range int64(3) {
		want = append(want, Step{Kind: changes.Created, After: create(t, s.Plants, id+1)})
	}
	recs := read(t, s.Changes, changes.Cursor{}, 100)
	wantRecords(t, "log", recs, want)
	wantRecords(t, "after the start", read(t, s.Changes, start, 100), want)
	wantRecords(t, "after the first", read(t, s.Changes, recs[0].Cursor, 100), want[1:])
	newest := recs[2].Cursor
	if h := head(t, s.Changes); h != newest {
		t.Fatalf("Head = %+v, want the newest record's cursor %+v", h, newest)
	}

	unknown := func(what string, after changes.Cursor) {
		t.Helper()
		if got, err := s.Changes.Changes(ctx, after, 10); !errors.Is(err, changes.ErrCursorUnknown) {
			t.Fatalf("Changes(after %s %+v) = %v, %v; want ErrCursorUnknown", what, after, got, err)
		}
	}
	other := func(c changes.Cursor) changes.Cursor { c.History ^= 1 << 62; return c }
	unknown("another store's newest", other(newest))
	unknown("another store's start", other(start))
	ahead := newest
	ahead.Version = recs[2].Version + 1
	unknown("one version ahead of the head", ahead)
	ahead.Version = 1<<53 - 1
	unknown("far ahead of the head", ahead)
	ahead = newest
	ahead.Tx++
	unknown("a transaction ahead of the head", ahead)
	between := recs[1].Cursor
	between.Version--
	if between == recs[0].Cursor {
		between.Tx++ // versions without a gap: a position beside the log's
	}
	unknown("between two changes", between)
	// What a store was told of a follower it refused changes nothing.
	wantRecords(t, "after the start, still", read(t, s.Changes, start, 100), want)
}
