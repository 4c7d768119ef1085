package chaos

import (
	"encoding/base64"
	"encoding/binary"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// cursorOf is the feed's text of the cursor (tx, version) of the store
// whose history is 7.
func cursorOf(tx uint64, version int64) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[:8], 7)
	binary.BigEndian.PutUint64(b[8:16], tx)
	binary.BigEndian.PutUint64(b[16:], uint64(version))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// feedChange is the feed's change of p (or p's id, for plant.deleted) at
// version v in transaction tx, committed at d.
func feedChange(typ string, p Plant, tx uint64, v int64, d time.Duration) FeedChange {
	c := FeedChange{Cursor: cursorOf(tx, v), Type: typ, ID: p.ID, Version: v, Timestamp: stamp(d)}
	if typ != typeDeleted {
		c.Plant = &plantJSON{ID: p.ID, Name: p.Name, Tag: p.Tag}
	}
	return c
}

// page is a page after after, its next the last change's cursor.
func page(after string, changes ...FeedChange) FeedPage {
	next := after
	if len(changes) > 0 {
		next = changes[len(changes)-1].Cursor
	}
	return FeedPage{Replica: "r0", After: after, Next: next, Changes: changes}
}

// TestCheckFeed: a follow whose cursors increase (by transaction, then
// version: a later transaction may hold a smaller version) and whose
// changes give the final reads passes; a duplicate, a step back, a wrong
// next, a plant's versions out of order and a mirror that is not the final
// reads are each found, naming the id.
func TestCheckFeed(t *testing.T) {
	ms := time.Millisecond
	ops, p, q, r := eventHistory()
	reads := finalReads(ops)
	c1 := feedChange(typeCreated, p, 10, 1, ms)
	c5 := feedChange(typeCreated, r, 10, 5, ms) // id 2's create, the same transaction
	c2 := feedChange(typeUpdated, q, 11, 2, 11*ms)
	c6 := feedChange(typeDeleted, Plant{ID: 2}, 12, 6, 11*ms)
	c3 := feedChange(typeDeleted, Plant{ID: 1}, 13, 3, 21*ms) // a later transaction, a smaller version
	c4 := feedChange(typeCreated, p, 14, 4, 31*ms)
	clean := []FeedPage{
		page("", c1, c5),
		page(c5.Cursor, c2, c6),
		page(c6.Cursor),
		page(c6.Cursor, c3, c4),
		page(c4.Cursor),
	}
	violations := func(rep FeedReport) []string {
		c := &Cluster{}
		rep.violate(c)
		return c.Violations()
	}

	t.Run("clean", func(t *testing.T) {
		rep := checkFeed(clean, reads, wallOf, "")
		if rep.Pages != 5 || rep.Changes != 6 || rep.Mirror.Compared != 2 || !rep.complete() {
			t.Fatalf("report %+v, want 5 pages, 6 changes, 2 ids compared, complete", rep)
		}
		if v := violations(rep); len(v) != 0 {
			t.Fatalf("violations %q", v)
		}
	})
	t.Run("a cursor steps back", func(t *testing.T) {
		back := feedChange(typeDeleted, Plant{ID: 1}, 11, 3, 21*ms) // before c6's transaction
		pages := []FeedPage{page("", c1, c5), page(c5.Cursor, c2, c6), page(c6.Cursor, back, c4)}
		rep := checkFeed(pages, reads, wallOf, "")
		want := []string{"id 1: cursor " + back.Cursor + " steps back from " + c6.Cursor + " (page 2 from r0)"}
		if !slices.Equal(rep.Order, want) {
			t.Fatalf("order %q, want %q", rep.Order, want)
		}
		if v := violations(rep); len(v) != 1 || !strings.Contains(v[0], "cursors out of order: id 1:") {
			t.Fatalf("violations %q", v)
		}
	})
	t.Run("a cursor of another history", func(t *testing.T) {
		other := c4
		b, _ := decodeCursor(c4.Cursor)
		b[7] = 8 // another store's, or a restored copy's after a restore it was not told of
		other.Cursor = base64.RawURLEncoding.EncodeToString(b)
		pages := []FeedPage{page("", c1, c5), page(c5.Cursor, c2, c6), page(c6.Cursor, c3, other)}
		rep := checkFeed(pages, reads, wallOf, "")
		want := "id 1: cursor " + other.Cursor + " of another history than " + c3.Cursor + " (page 2 from r0)"
		if !slices.Contains(rep.Malformed, want) {
			t.Fatalf("malformed %q, want %q among them", rep.Malformed, want)
		}
	})
	t.Run("a cursor again", func(t *testing.T) {
		pages := slices.Clone(clean)
		pages[3] = page(c2.Cursor, c6, c3, c4) // resumed from an older next: c6 again
		rep := checkFeed(pages, reads, wallOf, "")
		want := []string{"id 2: cursor " + c6.Cursor + " again (page 3 from r0)"}
		if !slices.Equal(rep.Order, want) {
			t.Fatalf("order %q, want %q", rep.Order, want)
		}
		if !slices.Equal(rep.Versions, []string{"id 2: version 6 after version 6 (cursor " + c6.Cursor + ")"}) {
			t.Fatalf("versions %q", rep.Versions)
		}
	})
	t.Run("a plant's older change after its newer one", func(t *testing.T) {
		old := feedChange(typeUpdated, q, 13, 1, 21*ms) // id 1's version 1, after its version 2
		pages := []FeedPage{page("", c1, c5), page(c5.Cursor, c2, c6, old)}
		rep := checkFeed(pages, reads, wallOf, "")
		want := []string{"id 1: version 1 after version 2 (cursor " + old.Cursor + ")"}
		if !slices.Equal(rep.Versions, want) || len(rep.Order) != 0 {
			t.Fatalf("versions %q, order %q; want %q, none", rep.Versions, rep.Order, want)
		}
	})
	t.Run("a page's next", func(t *testing.T) {
		pages := slices.Clone(clean)
		pages[2].Next = c2.Cursor // an empty page must give its after back
		rep := checkFeed(pages, reads, wallOf, "")
		if len(rep.Next) != 1 || !strings.HasPrefix(rep.Next[0], "page 2 from r0 after ") {
			t.Fatalf("next %q", rep.Next)
		}
	})
	t.Run("the mirror is not the final read", func(t *testing.T) {
		pages := slices.Clone(clean)
		pages[3] = page(c6.Cursor, c3) // c4, id 1's create, never came
		rep := checkFeed(pages, reads, wallOf, "")
		want := []string{"id 1: final read p1-0/green, the feed's mirror has absent (newest change plant.deleted version 3)"}
		if !slices.Equal(rep.Mirror.Differ, want) || rep.complete() {
			t.Fatalf("mirror differs %q, want %q", rep.Mirror.Differ, want)
		}
		if v := violations(rep); len(v) != 1 || !strings.Contains(v[0], "change feed: the mirror is not the final read: id 1:") {
			t.Fatalf("violations %q", v)
		}
	})
	t.Run("a malformed cursor", func(t *testing.T) {
		bad := c4
		bad.Cursor = "not-a-cursor"
		pages := []FeedPage{page("", c1, c5), page(c5.Cursor, bad)}
		rep := checkFeed(pages, reads, wallOf, "")
		if len(rep.Malformed) != 1 || !strings.HasPrefix(rep.Malformed[0], `id 1: cursor "not-a-cursor"`) {
			t.Fatalf("malformed %q", rep.Malformed)
		}
	})
}

// TestCheckTagFeed: a tag filter's follow passes when every plant it gives
// has the tag (one leaving it given as a deletion), its nexts never step
// behind its last change (a bookmark's next is past it), and its mirror
// gives the final reads restricted to the tag; a plant of another tag, a
// next behind, and a mirror that is not the restricted reads are each
// found.
func TestCheckTagFeed(t *testing.T) {
	ms := time.Millisecond
	ops, p, q, r := eventHistory()
	reads := finalReads(ops)
	if p.Tag != "green" || r.Tag != "green" {
		t.Fatalf("the history's plants are %+v and %+v, want both green", p, r)
	}
	// As the filter gives them: a change that leaves a plant out of the
	// tag is its deletion.
	tagged := func(c FeedChange) FeedChange {
		if c.Plant != nil && c.Plant.Tag != "green" {
			c.Type, c.Plant = typeDeleted, nil
		}
		return c
	}
	c1 := feedChange(typeCreated, p, 10, 1, ms)
	c5 := feedChange(typeCreated, r, 10, 5, ms)
	c2 := tagged(feedChange(typeUpdated, q, 11, 2, 11*ms))
	c6 := feedChange(typeDeleted, Plant{ID: 2}, 12, 6, 11*ms)
	c3 := feedChange(typeDeleted, Plant{ID: 1}, 13, 3, 21*ms)
	c4 := feedChange(typeCreated, p, 14, 4, 31*ms)
	bookmark := FeedPage{Replica: "r1", After: c4.Cursor, Next: cursorOf(15, 7)} // a change of another tag read, not given
	clean := []FeedPage{
		page("", c1, c5),
		page(c5.Cursor, c2, c6),
		page(c6.Cursor),
		page(c6.Cursor, c3, c4),
		bookmark,
		page(bookmark.Next),
	}
	violations := func(rep FeedReport) []string {
		c := &Cluster{}
		rep.violate(c)
		return c.Violations()
	}

	t.Run("clean", func(t *testing.T) {
		rep := checkFeed(clean, reads, wallOf, "green")
		if rep.Pages != 6 || rep.Changes != 6 || rep.Mirror.Compared != 2 || !rep.complete() {
			t.Fatalf("report %+v, want 6 pages, 6 changes, 2 ids compared, complete", rep)
		}
		if v := violations(rep); len(v) != 0 {
			t.Fatalf("violations %q", v)
		}
		// Unfiltered, the bookmark's next is wrong.
		if rep := checkFeed(clean, reads, wallOf, ""); len(rep.Next) != 1 {
			t.Fatalf("unfiltered, the nexts found wrong: %q, want the bookmark's", rep.Next)
		}
	})
	t.Run("a plant of another tag", func(t *testing.T) {
		red := feedChange(typeCreated, Plant{ID: 2, Name: "p2-0", Tag: "red"}, 10, 5, ms)
		pages := slices.Clone(clean)
		pages[0] = page("", c1, red)
		rep := checkFeed(pages, reads, wallOf, "green")
		want := []string{`id 2: plant.created of a plant tagged "red" at ` + red.Cursor}
		if !slices.Equal(rep.Filter, want) {
			t.Fatalf("filter %q, want %q", rep.Filter, want)
		}
		if v := violations(rep); len(v) != 1 || !strings.HasPrefix(v[0], "change feed, tag green: a change the tag filter does not give: id 2:") {
			t.Fatalf("violations %q", v)
		}
	})
	t.Run("a next behind its last change", func(t *testing.T) {
		pages := slices.Clone(clean)
		pages[3].Next = c3.Cursor
		rep := checkFeed(pages, reads, wallOf, "green")
		want := []string{"page 3 from r0 after " + `"` + c6.Cursor + `": next "` + c3.Cursor + `", before "` + c4.Cursor + `"`}
		if !slices.Equal(rep.Next, want) {
			t.Fatalf("next %q, want %q", rep.Next, want)
		}
	})
	t.Run("the mirror is not the restricted reads", func(t *testing.T) {
		moved := maps.Clone(reads)
		f := moved[1]
		f.Plant.Tag = "red" // read back with another tag: absent from the tag's mirror
		moved[1] = f
		rep := checkFeed(clean, moved, wallOf, "green")
		want := []string{"id 1: final read absent, the tag green feed's mirror has p1-0/green (newest change plant.created version 4)"}
		if !slices.Equal(rep.Mirror.Differ, want) || rep.complete() {
			t.Fatalf("mirror differs %q, want %q", rep.Mirror.Differ, want)
		}
	})
}
