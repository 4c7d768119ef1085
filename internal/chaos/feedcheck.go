package chaos

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// FeedReport is what the change feed's follower got, held against the
// history.
type FeedReport struct {
	Checked  bool
	Tag      string // the follower's tag filter, "" for every change
	Pages    int    // pages answered 200
	Changes  int    // changes in them
	Retried  int    // calls that failed (a replica faulted) and were made again
	Failure  string
	CaughtUp bool          // an empty page came at the end with the mirror complete
	Follow   time.Duration // the end's follow, until caught up or its limit

	Mirror    mirrorDiff // the feed's mirror against the final reads
	Malformed []string   // changes or cursors not of the contract
	Order     []string   // cursors that do not increase (a duplicate, a step back)
	Next      []string   // pages whose next is not their last change's cursor (or after); with a tag, one before it
	Filter    []string   // changes a tag filter does not give (a plant given with another tag)
	Versions  []string   // a plant's version not greater than the one before it (given twice, or an older change after a newer)
}

// decodeCursor is a cursor's 24 bytes (the store's history, Tx, then
// Version, big-endian), which compare as the cursors of one history do.
func decodeCursor(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return b, err == nil && len(b) == 24
}

// checkFeed holds the pages, in the order they came, against the final
// reads: the cursors increase strictly across the whole follow (every
// change comes once, none behind one already given), each page's next is
// its last change's cursor (its after when empty), a plant's changes come
// in version order, and they give the final reads.
//
// With a tag, the pages are a tag filter's: every plant given has the tag
// (a plant leaving it is given as a deletion), a page's next may be past
// its last change (the changes read and not given: a bookmark) but never
// before it, and the mirror gives the final reads restricted to the tag
// (a plant with another tag is absent from it).
func checkFeed(pages []FeedPage, reads map[int64]finalRead, wall func(time.Duration) time.Time, tag string) FeedReport {
	rep := FeedReport{Checked: true, Tag: tag, Pages: len(pages)}
	m := mirror{}
	var last []byte
	lastText := ""
	versions := map[int64]int64{}
	for pi, p := range pages {
		want := p.After
		for _, fc := range p.Changes {
			rep.Changes++
			want = fc.Cursor
			cur, ok := decodeCursor(fc.Cursor)
			if !ok {
				rep.Malformed = append(rep.Malformed, fmt.Sprintf("id %d: cursor %q on page %d from %s", fc.ID, fc.Cursor, pi, p.Replica))
				continue
			}
			if last != nil && !bytes.Equal(cur[:8], last[:8]) {
				// One store, one history: a follow never changes it.
				rep.Malformed = append(rep.Malformed, fmt.Sprintf("id %d: cursor %s of another history than %s (page %d from %s)", fc.ID, fc.Cursor, lastText, pi, p.Replica))
				continue
			}
			if last != nil {
				switch bytes.Compare(cur, last) {
				case 0:
					rep.Order = append(rep.Order, fmt.Sprintf("id %d: cursor %s again (page %d from %s)", fc.ID, fc.Cursor, pi, p.Replica))
				case -1:
					rep.Order = append(rep.Order, fmt.Sprintf("id %d: cursor %s steps back from %s (page %d from %s)", fc.ID, fc.Cursor, lastText, pi, p.Replica))
				}
			}
			if last == nil || bytes.Compare(cur, last) > 0 {
				last, lastText = cur, fc.Cursor
			}
			c, bad := parseChange(fc.Type, fc.Timestamp, fc.ID, fc.Version, fc.Plant)
			if bad != "" {
				rep.Malformed = append(rep.Malformed, fmt.Sprintf("id %d: change at %s: %s", fc.ID, fc.Cursor, bad))
				continue
			}
			if v, ok := versions[c.ID]; ok && c.Version <= v {
				rep.Versions = append(rep.Versions, fmt.Sprintf("id %d: version %d after version %d (cursor %s)", c.ID, c.Version, v, fc.Cursor))
			}
			if tag != "" && c.Type != typeDeleted && c.Plant.Tag != tag {
				rep.Filter = append(rep.Filter, fmt.Sprintf("id %d: %s of a plant tagged %q at %s", c.ID, c.Type, c.Plant.Tag, fc.Cursor))
			}
			versions[c.ID] = max(versions[c.ID], c.Version)
			m.apply(c)
		}
		if tag == "" && p.Next != want {
			rep.Next = append(rep.Next, fmt.Sprintf("page %d from %s after %q: next %q, want %q", pi, p.Replica, p.After, p.Next, want))
		}
		if tag != "" && !notBefore(p.Next, want) {
			rep.Next = append(rep.Next, fmt.Sprintf("page %d from %s after %q: next %q, before %q", pi, p.Replica, p.After, p.Next, want))
		}
	}
	if tag == "" {
		rep.Mirror = compareMirror("the feed's mirror", m, reads, wall)
		return rep
	}
	tagged := make(map[int64]finalRead, len(reads))
	for id, f := range reads {
		if f.Plant.Tag != tag {
			f.Plant = Plant{ID: id}
		}
		tagged[id] = f
	}
	rep.Mirror = compareMirror("the tag "+tag+" feed's mirror", m, tagged, wall)
	return rep
}

// notBefore reports whether the cursor next is want or after it (want ""
// is the log's beginning); a cursor that does not decode is before.
func notBefore(next, want string) bool {
	if want == "" {
		_, ok := decodeCursor(next)
		return next == "" || ok
	}
	n, okN := decodeCursor(next)
	w, okW := decodeCursor(want)
	return okN && okW && bytes.Compare(n, w) >= 0
}

// complete reports whether the feed's mirror is the final reads.
func (rep FeedReport) complete() bool { return len(rep.Mirror.Differ) == 0 }

// violate records what broke the feed's properties, naming an id.
func (rep FeedReport) violate(c *Cluster) {
	if !rep.Checked {
		return
	}
	name := rep.name()
	if rep.Failure != "" {
		c.Violate("%s: %s", name, rep.Failure)
	}
	report := func(what string, lines []string) {
		for i, l := range lines {
			if i == 5 {
				c.Violate("%s: %s: and %d more", name, what, len(lines)-i)
				return
			}
			c.Violate("%s: %s: %s", name, what, l)
		}
	}
	report("the mirror is not the final read", rep.Mirror.Differ)
	report("malformed", rep.Malformed)
	report("cursors out of order", rep.Order)
	report("a page's next", rep.Next)
	report("a plant's versions out of order", rep.Versions)
	report("a change the tag filter does not give", rep.Filter)
}

// name is the follower's, in the report's lines.
func (rep FeedReport) name() string {
	if rep.Tag == "" {
		return "change feed"
	}
	return "change feed, tag " + rep.Tag
}

// String is the report's summary lines.
func (rep FeedReport) String() string {
	if !rep.Checked {
		return rep.name() + ": not checked"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d changes in %d pages; failed calls retried: %d; ", rep.name(), rep.Changes, rep.Pages, rep.Retried)
	if rep.CaughtUp {
		fmt.Fprintf(&b, "caught up in an end's follow of %s\n", rep.Follow.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(&b, "NOT caught up within %s\n", rep.Follow.Round(100*time.Millisecond))
	}
	against := "the final reads"
	if rep.Tag != "" {
		against += " restricted to tag " + rep.Tag
	}
	fmt.Fprintf(&b, "  mirror against %s: %d ids compared, %d differ, %d changed after their final read (not compared); cursors out of order: %d; wrong nexts: %d; versions out of order per plant: %d; malformed: %d",
		against, rep.Mirror.Compared, len(rep.Mirror.Differ), rep.Mirror.Late, len(rep.Order), len(rep.Next), len(rep.Versions), len(rep.Malformed))
	if rep.Tag != "" {
		fmt.Fprintf(&b, "; not the filter's: %d", len(rep.Filter))
	}
	return b.String()
}
