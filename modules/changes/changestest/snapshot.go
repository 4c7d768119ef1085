package changestest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A snapshot read page by page (changes.ReadSnapshot), then the log after
// its end, while writers create, replace (moving plants between tags) and
// delete: the mirror built from what it gives equals the store at the end,
// each plant's versions strictly increase as given (so no change comes
// twice, and none comes behind the snapshot's row of its plant), and a
// tag's follower mirrors that tag's plants. Small pages make many of them,
// each at a later head.
func testSnapshotThenChangesUnderWriters(t *testing.T, s Subject) {
	const ids = 60
	for id := range int64(ids / 2) {
		p := plant.Plant{ID: id * 2, Name: "seed", Tag: snapshotTags[id%3]}
		if _, err := s.Plants.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 40)) //nolint:gosec // G404: a seeded sequence, not a secret
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := rng.Int64N(ids)
				p := plant.Plant{ID: id, Name: fmt.Sprintf("w%d-%d", w, i), Tag: snapshotTags[rng.IntN(len(snapshotTags))]}
				var err error
				switch rng.IntN(3) {
				case 0:
					_, err = s.Plants.Create(ctx, p)
				case 1:
					err = s.Plants.Replace(ctx, p, nil)
				default:
					err = s.Plants.Delete(ctx, id)
				}
				if err != nil && !errors.Is(err, plant.ErrNotFound) && !errors.Is(err, plant.ErrConflict) {
					t.Errorf("write %d: %v", id, err)
					return
				}
				writes.Add(1)
				// A pace a follower in pages of four keeps up with on
				// every store: one that cannot falls behind for ever.
				time.Sleep(time.Millisecond)
			}
		})
	}
	filters := []changes.Filter{{}, {Tag: snapshotTags[1]}}
	mirrors := make([]*snapshotMirror, len(filters))
	for i, f := range filters {
		mirrors[i] = &snapshotMirror{plants: map[int64]plant.Plant{}, versions: map[int64]int64{}, given: map[int64]string{}}
		mirrors[i].readSnapshot(t, s.Changes, f, 4)
	}
	// The writers go on for a while past the snapshots' end.
	for writes.Load() < 300 && !t.Failed() {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for i, f := range filters {
		m := mirrors[i]
		m.follow(t, s.Changes, f, head(t, s.Changes))
		want := map[int64]plant.Plant{}
		plants, err := s.Plants.List(ctx, plant.ListQuery{Tag: f.Tag, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plants {
			want[p.ID] = p
		}
		if got, want := spellPlants(m.plants), spellPlants(want); got != want {
			t.Errorf("filter %s: the mirror holds\n%s\nthe store\n%s", spellFilter(f), got, want)
		}
		if m.pages < 2 || m.synthetic == 0 {
			t.Errorf("filter %s: %d pages with %d plants of the snapshot: want several pages", spellFilter(f), m.pages, m.synthetic)
		}
	}
}

// spellPlants spells plants in id order.
func spellPlants(plants map[int64]plant.Plant) string {
	ids := slices.Sorted(maps.Keys(plants))
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(show(changes.Created, plants[id]) + "; ")
	}
	return b.String()
}

var snapshotTags = []*string{nil, plant.StringPtr("a"), plant.StringPtr("b")}

// snapshotMirror is a follower's copy of the plants, and the greatest
// version it was given of each.
type snapshotMirror struct {
	plants           map[int64]plant.Plant
	versions         map[int64]int64
	given            map[int64]string // what gave the plant's last version, for failures
	at               changes.Cursor
	pages, synthetic int
}

// apply applies one given change, failing t when its version is not past
// the plant's last.
func (m *snapshotMirror) apply(t *testing.T, what string, rec changes.Record) {
	t.Helper()
	if v, ok := m.versions[rec.Plant.ID]; ok && rec.Version <= v {
		t.Errorf("%s: %s (cursor %+v) after %s", what, spell(rec), rec.Cursor, m.given[rec.Plant.ID])
	}
	m.versions[rec.Plant.ID] = rec.Version
	m.given[rec.Plant.ID] = fmt.Sprintf("%s: %s (cursor %+v)", what, spell(rec), rec.Cursor)
	if rec.Kind == changes.Deleted {
		delete(m.plants, rec.Plant.ID)
	} else {
		m.plants[rec.Plant.ID] = rec.Plant
	}
}

// readSnapshot reads a snapshot of f to its end, in pages of limit.
func (m *snapshotMirror) readSnapshot(t *testing.T, log changes.ChangeLog, f changes.Filter, limit int) {
	t.Helper()
	var pos changes.SnapshotPosition
	for {
		step, err := changes.ReadSnapshot(ctx, log, pos, f, limit, time.Now())
		if err != nil {
			t.Fatalf("ReadSnapshot(%+v) = %v", pos, err)
		}
		m.pages++
		if len(step.Items) > limit {
			t.Fatalf("a page of %d items, limit %d", len(step.Items), limit)
		}
		for _, it := range step.Items {
			if it.Synthetic {
				m.synthetic++
				if it.Record.Kind != changes.Created || (f.Tag != nil && (it.Record.Plant.Tag == nil || *it.Record.Plant.Tag != *f.Tag)) {
					t.Errorf("snapshot item %s, filter %s", spell(it.Record), spellFilter(f))
				}
			}
			what := "snapshot change"
			if it.Synthetic {
				what = "snapshot plant"
			}
			m.apply(t, what, it.Record)
		}
		pos = step.Next
		if step.Done {
			m.at = pos.Cursor
			return
		}
	}
}

// follow applies the log's changes, as f gives them, after the mirror's
// cursor up to end.
func (m *snapshotMirror) follow(t *testing.T, log changes.ChangeLog, f changes.Filter, end changes.Cursor) {
	t.Helper()
	for m.at.Less(end) {
		recs := read(t, log, m.at, 50)
		if len(recs) == 0 {
			t.Fatalf("no change after %+v, before the head %+v", m.at, end)
		}
		for _, rec := range recs {
			if r, ok := f.Apply(rec); ok {
				m.apply(t, "changes", r)
			}
			m.at = rec.Cursor
		}
	}
}

// A snapshot of a quiet store, in pages of two, with a write between the
// first two pages: exactly the plants, in id order, at the version of the
// log's head when each page was read, the change of a plant already given
// before the next plants, and the end at the log's head.
func testSnapshotPagesOfAQuietStore(t *testing.T, s Subject) {
	for id := int64(1); id <= 5; id++ {
		create(t, s.Plants, id)
	}
	if err := s.Plants.Delete(ctx, 4); err != nil {
		t.Fatal(err)
	}
	head1 := head(t, s.Changes)
	step := readStep(t, s.Changes, changes.SnapshotPosition{}, 2)
	wantStep(t, "page 1", step, head1.Version, false, "S plant.created 1 \"plant 1\" tag \"-\"", "S plant.created 2 \"plant 2\" tag \"-\"")
	if step.Next.Cursor != head1 || step.Next.Last == nil || *step.Next.Last != 2 {
		t.Fatalf("page 1 goes on from %+v, want the head %+v and id 2", step.Next, head1)
	}
	if err := s.Plants.Replace(ctx, plant.Plant{ID: 1, Name: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	create(t, s.Plants, 6)
	head2 := head(t, s.Changes)
	step = readStep(t, s.Changes, step.Next, 2)
	wantStep(t, "page 2", step, head2.Version, false, "C plant.updated 1 \"one\" tag \"-\"", "S plant.created 3 \"plant 3\" tag \"-\"")
	if v := step.Items[0].Record.Version; v <= head1.Version || v >= head2.Version {
		t.Errorf("the change of plant 1 has version %d, want it between the pages' heads %d and %d", v, head1.Version, head2.Version)
	}
	step = readStep(t, s.Changes, step.Next, 2)
	wantStep(t, "page 3", step, head2.Version, false, "S plant.created 5 \"plant 5\" tag \"-\"", "S plant.created 6 \"plant 6\" tag \"-\"")
	step = readStep(t, s.Changes, step.Next, 2)
	wantStep(t, "page 4", step, head2.Version, true)
	if step.Next.Cursor != head2 {
		t.Fatalf("the snapshot ends at %+v, want the head %+v", step.Next.Cursor, head2)
	}
	// A snapshot with nothing to give is one empty page that ends it.
	f := changes.Filter{Tag: plant.StringPtr("none has it")}
	tagged, err := changes.ReadSnapshot(ctx, s.Changes, changes.SnapshotPosition{}, f, 2, time.Now())
	if err != nil || len(tagged.Items) != 0 || !tagged.Done || tagged.Next.Cursor != head2 {
		t.Fatalf("a snapshot of a tag no plant has = %+v, %v; want an empty page that ends at the head %+v", tagged, err, head2)
	}
}

func readStep(t *testing.T, log changes.ChangeLog, from changes.SnapshotPosition, limit int) changes.SnapshotStep {
	t.Helper()
	step, err := changes.ReadSnapshot(ctx, log, from, changes.Filter{}, limit, time.Now())
	if err != nil {
		t.Fatalf("ReadSnapshot(%+v) = %v", from, err)
	}
	return step
}

// wantStep fails t unless step holds want (S for a plant of the snapshot,
// of version, C for a change), and is done or not.
func wantStep(t *testing.T, what string, step changes.SnapshotStep, version int64, done bool, want ...string) {
	t.Helper()
	var got []string
	for _, it := range step.Items {
		kind := "C"
		if it.Synthetic {
			kind = "S"
			if it.Record.Version != version {
				t.Errorf("%s: %s, want the page's version %d", what, spell(it.Record), version)
			}
		}
		got = append(got, kind+" "+show(it.Record.Kind, it.Record.Plant))
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) || step.Done != done {
		t.Fatalf("%s: %q done %v, want %q done %v", what, got, step.Done, want, done)
	}
}
