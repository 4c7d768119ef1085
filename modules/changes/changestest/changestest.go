// Package changestest is the conformance suite of changes.ChangeLog: every
// store runs it, as storetest holds every plant.Store to the same
// semantics. RunScript is the writes it checks the log of, which the
// outbox's suite checks the announcements of.
package changestest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

var ctx = context.Background()

// Subject is a store under test, new and empty: its plants and its change
// log (the same store's).
type Subject struct {
	Plants  plant.Store
	Changes changes.ChangeLog
}

// Run runs the change log's suite on the stores open makes. It compares
// cursors by their order (Cursor.Less) and by what they point at, never by
// their transaction ids, which only postgres sets.
func Run(t *testing.T, open func(t *testing.T) Subject) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, s Subject)
	}{
		{"OneRecordPerCommittedChangeInOrder", testOneRecordPerCommittedChange},
		{"PagesMissNothingAndRepeatNothing", testPagesMissNothingAndRepeatNothing},
		{"HeadThenAListingMissesNothing", testHeadThenAListingMissesNothing},
		{"WaitClosesAtTheNextCommit", testWaitClosesAtTheNextCommit},
		{"PrunedCursorsAreGone", testPrunedCursorsAreGone},
		{"CursorsOfAnotherHistoryAreRefused", testCursorsOfAnotherHistoryAreRefused},
		{"FilteredHistoryIsTheHistoryRestricted", testFilteredHistoryIsTheHistoryRestricted},
		{"FilteredHistoryUnderConcurrentWriters", testFilteredHistoryUnderConcurrentWriters},
		{"HeadIsWhereNowStarts", testHeadIsWhereNowStarts},
		{"SnapshotThenChangesUnderWriters", testSnapshotThenChangesUnderWriters},
		{"SnapshotPagesOfAQuietStore", testSnapshotPagesOfAQuietStore},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open(t)) })
	}
}

// read reads the log after a cursor, failing t on an error.
func read(t *testing.T, log changes.ChangeLog, after changes.Cursor, limit int) []changes.Record {
	t.Helper()
	recs, err := log.Changes(ctx, after, limit)
	if err != nil {
		t.Fatalf("Changes(after %v, %d) = %v", after, limit, err)
	}
	return recs
}

// head reads the head, failing t on an error.
func head(t *testing.T, log changes.ChangeLog) changes.Cursor {
	t.Helper()
	c, err := log.Head(ctx)
	if err != nil {
		t.Fatalf("Head = %v", err)
	}
	return c
}

// create creates a plant named after its id, failing t on an error.
func create(t *testing.T, plants plant.Store, id int64) plant.Plant {
	t.Helper()
	p := plant.Plant{ID: id, Name: fmt.Sprintf("plant %d", id)}
	if _, err := plants.Create(ctx, p); err != nil {
		t.Fatalf("Create(%d) = %v", id, err)
	}
	return p
}

// spell spells a record for failures and comparisons, without its cursor
// and time.
func spell(r changes.Record) string {
	return fmt.Sprintf("v%d %s", r.Version, show(r.Kind, r.Plant))
}

// show spells a change's kind and plant for failures.
func show(k changes.Kind, p plant.Plant) string {
	tag := "-"
	if p.Tag != nil {
		tag = *p.Tag
	}
	return fmt.Sprintf("%s %d %q tag %q", k, p.ID, p.Name, tag)
}

// spellAll spells records whole, cursors and times too.
func spellAll(recs []changes.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "[%d/%d at %d: %s] ", r.Cursor.Tx, r.Cursor.Version, r.At.UnixNano(), spell(r))
	}
	return b.String()
}

// wantRecords fails t unless recs are, in order, the changes want (kinds
// and plants), with cursors and versions increasing.
func wantRecords(t *testing.T, what string, recs []changes.Record, want []Step) {
	t.Helper()
	if len(recs) != len(want) {
		var got []string
		for _, r := range recs {
			got = append(got, spell(r))
		}
		t.Fatalf("%s: %d records %q, want %d", what, len(recs), got, len(want))
	}
	for i, r := range recs {
		if r.Kind != want[i].Kind || !r.Plant.Equal(want[i].Logged()) {
			t.Errorf("%s %d: %s, want %s %s", what, i, spell(r), want[i].Kind, show(want[i].Kind, want[i].Logged()))
		}
		if r.Cursor.Version != r.Version || r.Version <= 0 || time.Since(r.At) > time.Minute || time.Until(r.At) > time.Minute {
			t.Errorf("%s %d: cursor %+v version %d at %v, want the version in the cursor, positive, committed just now", what, i, r.Cursor, r.Version, r.At)
		}
		if i > 0 && (!recs[i-1].Cursor.Less(r.Cursor) || r.Version <= recs[i-1].Version || r.At.Before(recs[i-1].At)) {
			t.Errorf("%s %d: cursor %+v v%d at %v after cursor %+v v%d at %v: want both greater, no earlier", what, i,
				r.Cursor, r.Version, r.At, recs[i-1].Cursor, recs[i-1].Version, recs[i-1].At)
		}
	}
}

// Every committed change writes one record, in the order of the commits;
// a write that changes nothing writes none. Head is the newest record's
// cursor.
func testOneRecordPerCommittedChange(t *testing.T, s Subject) {
	if c := head(t, s.Changes); c.History == 0 || c.Tx != 0 || c.Version != 0 {
		t.Fatalf("Head of a new store = %+v, want the store's history at the start", c)
	}
	if recs := read(t, s.Changes, changes.Cursor{}, 10); len(recs) != 0 {
		t.Fatalf("a new store's log holds %d records", len(recs))
	}
	var logged int
	want := RunScript(t, s.Plants, func(st Step) {
		recs := read(t, s.Changes, changes.Cursor{}, 100)
		if st.Kind != 0 {
			logged++
		}
		if len(recs) != logged {
			t.Fatalf("after %s: %d records, want %d", st.Name, len(recs), logged)
		}
	})
	recs := read(t, s.Changes, changes.Cursor{}, 100)
	wantRecords(t, "log", recs, want)
	if c := head(t, s.Changes); c != recs[len(recs)-1].Cursor {
		t.Fatalf("Head = %+v, want the newest record's cursor %+v", c, recs[len(recs)-1].Cursor)
	}
	if more := read(t, s.Changes, recs[len(recs)-1].Cursor, 10); len(more) != 0 {
		t.Fatalf("%d records after the newest", len(more))
	}
}

// Pages of a limit, each after the last one's final cursor, are the whole
// log: no record twice, none missing.
func testPagesMissNothingAndRepeatNothing(t *testing.T, s Subject) {
	var want []Step
	for id := range int64(7) {
		p := create(t, s.Plants, id+1)
		want = append(want, Step{Kind: changes.Created, After: p})
	}
	all := read(t, s.Changes, changes.Cursor{}, 100)
	wantRecords(t, "log", all, want)
	for _, limit := range []int{1, 3, 7, 8} {
		var got []changes.Record
		var sizes []int
		for after := (changes.Cursor{}); ; {
			page := read(t, s.Changes, after, limit)
			sizes = append(sizes, len(page))
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].Cursor
		}
		wantSizes := map[int][]int{1: {1, 1, 1, 1, 1, 1, 1, 0}, 3: {3, 3, 1, 0}, 7: {7, 0}, 8: {7, 0}}[limit]
		if fmt.Sprint(sizes) != fmt.Sprint(wantSizes) {
			t.Errorf("limit %d: pages of %v, want %v", limit, sizes, wantSizes)
		}
		if spellAll(got) != spellAll(all) {
			t.Errorf("limit %d: the pages hold %s, want %s", limit, spellAll(got), spellAll(all))
		}
	}
	// After a cursor in the middle: the rest.
	if rest := read(t, s.Changes, all[3].Cursor, 100); spellAll(rest) != spellAll(all[4:]) {
		t.Errorf("after the 4th record: %s, want %s", spellAll(rest), spellAll(all[4:]))
	}
}

// A follower takes Head, lists, then follows the log after Head: it misses
// no change, whether committed before its listing (which then shows it
// too) or after.
func testHeadThenAListingMissesNothing(t *testing.T, s Subject) {
	create(t, s.Plants, 1)
	create(t, s.Plants, 2)
	p3 := create(t, s.Plants, 3)
	h := head(t, s.Changes)
	p4 := create(t, s.Plants, 4) // between the head and the listing
	listed, err := s.Plants.List(ctx, plant.ListQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 4 {
		t.Fatalf("listed %d plants, want 4", len(listed))
	}
	p2 := plant.Plant{ID: 2, Name: "two", Tag: plant.StringPtr("t")}
	if err := s.Plants.Replace(ctx, p2, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Plants.Delete(ctx, 3); err != nil {
		t.Fatal(err)
	}
	wantRecords(t, "after the head", read(t, s.Changes, h, 100), []Step{
		{Kind: changes.Created, After: p4},
		{Kind: changes.Replaced, After: p2},
		{Kind: changes.Deleted, Before: p3},
	})
}

// closedWithin reports whether ch closes within d: a bound for a
// notification that may travel (postgres's LISTEN), not a speed check.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// Wait's channel closes at the next committed change, and each call gives
// the channel of the next one.
func testWaitClosesAtTheNextCommit(t *testing.T, s Subject) {
	first := s.Changes.Wait()
	select {
	case <-first:
		t.Fatal("Wait's channel is closed before any change")
	default:
	}
	create(t, s.Plants, 1)
	if !closedWithin(first, 10*time.Second) {
		t.Fatal("Wait's channel did not close at a create's commit")
	}
	second := s.Changes.Wait()
	if err := s.Plants.Replace(ctx, plant.Plant{ID: 1, Name: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(second, 10*time.Second) {
		t.Fatal("Wait's channel did not close at a replace's commit")
	}
	third := s.Changes.Wait()
	if err := s.Plants.Delete(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(third, 10*time.Second) {
		t.Fatal("Wait's channel did not close at a delete's commit")
	}
}

// PruneChanges removes the records committed before its time; a cursor
// before the newest removed record is gone, the zero cursor included (a
// follower from it would miss the removed changes), while one at it or
// after it still follows: it missed nothing.
func testPrunedCursorsAreGone(t *testing.T, s Subject) {
	var want []Step
	for id := range int64(3) {
		want = append(want, Step{Kind: changes.Created, After: create(t, s.Plants, id+1)})
	}
	recs := read(t, s.Changes, changes.Cursor{}, 100)
	wantRecords(t, "log", recs, want)
	prune := func(before time.Time, want int) {
		t.Helper()
		if n, err := s.Changes.PruneChanges(ctx, before); err != nil || n != want {
			t.Fatalf("PruneChanges(%v) = %d, %v; want %d", before, n, err, want)
		}
	}
	gone := func(after changes.Cursor) {
		t.Helper()
		if got, err := s.Changes.Changes(ctx, after, 10); !errors.Is(err, changes.ErrCursorGone) {
			t.Fatalf("Changes(after %+v) = %v, %v; want ErrCursorGone", after, got, err)
		}
	}
	prune(recs[0].At, 0) // committed at, not before
	wantRecords(t, "after pruning none", read(t, s.Changes, changes.Cursor{}, 100), want)

	prune(recs[2].At, 2)
	gone(changes.Cursor{})
	gone(recs[0].Cursor)
	wantRecords(t, "after the newest pruned", read(t, s.Changes, recs[1].Cursor, 100), want[2:])
	wantRecords(t, "after the one kept", read(t, s.Changes, recs[2].Cursor, 100), nil)

	prune(time.Now().Add(time.Hour), 1)
	prune(time.Now().Add(time.Hour), 0)
	gone(changes.Cursor{})
	gone(recs[1].Cursor)
	// All pruned: Head is still a cursor to follow from.
	h := head(t, s.Changes)
	if h.Less(recs[2].Cursor) {
		t.Fatalf("Head = %+v, before the newest change %+v", h, recs[2].Cursor)
	}
	wantRecords(t, "after the head of a pruned log", read(t, s.Changes, h, 100), nil)
	p4 := create(t, s.Plants, 4)
	wantRecords(t, "after the head, then a create", read(t, s.Changes, h, 100), []Step{{Kind: changes.Created, After: p4}})
}
