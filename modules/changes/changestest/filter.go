package changestest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A filtered follower's history is the log restricted by changes.Filter.
// The filter reads only what a record carries (its kind, the plant's id
// and, but for a deletion, its tag after the change), so the store's part
// is that every record carries those: over random writes (creates,
// replaces that change tags, deletes), the log filtered is exactly what
// the writes made filtered, change for change, and a mirror of a tag built
// from it holds exactly the store's plants of that tag.
func testFilteredHistoryIsTheHistoryRestricted(t *testing.T, s Subject) {
	rng := rand.New(rand.NewPCG(40, 2)) //nolint:gosec // G404: a seeded sequence, the same on every run, not a secret
	tags := []*string{nil, plant.StringPtr("a"), plant.StringPtr("b"), plant.StringPtr("")}
	stored := map[int64]plant.Plant{}
	var made []changes.Record // the changes the writes made: kind and plant, as a record carries them
	for i := range 150 {
		id := rng.Int64N(8) + 1
		p := plant.Plant{ID: id, Name: fmt.Sprintf("p%d", i), Tag: tags[rng.IntN(len(tags))]}
		_, held := stored[id]
		switch op := rng.IntN(3); {
		case op == 0 || !held:
			if _, err := s.Plants.Create(ctx, p); held != errors.Is(err, plant.ErrConflict) || (!held && err != nil) {
				t.Fatalf("create %d (held %v) = %v", id, held, err)
			}
			if !held {
				stored[id] = p
				made = append(made, changes.Record{Kind: changes.Created, Plant: p})
			}
		case op == 1:
			if err := s.Plants.Replace(ctx, p, nil); err != nil {
				t.Fatalf("replace %d = %v", id, err)
			}
			stored[id] = p
			made = append(made, changes.Record{Kind: changes.Replaced, Plant: p})
		default:
			if err := s.Plants.Delete(ctx, id); err != nil {
				t.Fatalf("delete %d = %v", id, err)
			}
			delete(stored, id)
			made = append(made, changes.Record{Kind: changes.Deleted, Plant: plant.Plant{ID: id}})
		}
	}
	recs := read(t, s.Changes, changes.Cursor{}, 1000)
	if len(recs) != len(made) {
		t.Fatalf("%d records, %d changes made", len(recs), len(made))
	}
	for _, f := range []changes.Filter{
		{Tag: plant.StringPtr("a")},
		{Tag: plant.StringPtr("")},
		{Tag: plant.StringPtr("b"), Kinds: []changes.Kind{changes.Deleted}},
		{Kinds: []changes.Kind{changes.Replaced}},
		{Kinds: []changes.Kind{changes.Created, changes.Deleted}},
	} {
		var got, want []string
		for i, rec := range recs {
			if r, ok := f.Apply(rec); ok {
				got = append(got, fmt.Sprintf("#%d %s", i, show(r.Kind, r.Plant)))
			}
			if r, ok := restrict(f, made[i]); ok {
				want = append(want, fmt.Sprintf("#%d %s", i, show(r.Kind, r.Plant)))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("filter %s:\n got %q\nwant %q", spellFilter(f), got, want)
		}
		if f.Tag == nil || len(f.Kinds) != 0 {
			continue
		}
		mirror := map[int64]plant.Plant{}
		for _, rec := range recs {
			if r, ok := f.Apply(rec); ok && r.Kind == changes.Deleted {
				delete(mirror, r.Plant.ID)
			} else if ok {
				mirror[r.Plant.ID] = r.Plant
			}
		}
		listed, err := s.Plants.List(ctx, plant.ListQuery{Tag: f.Tag, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != len(mirror) {
			t.Fatalf("mirror of tag %q holds %d plants, the store %d", *f.Tag, len(mirror), len(listed))
		}
		for _, p := range listed {
			if m, ok := mirror[p.ID]; !ok || !m.Equal(p) {
				t.Fatalf("mirror of tag %q: plant %d is %v, the store's %v", *f.Tag, p.ID, m, p)
			}
		}
	}
}

// restrict is the filter's rule, spelled again from a change as the test
// made it: a tag keeps a plant in it as it is, takes any other change but
// a create out as a deletion; the kinds then keep theirs.
func restrict(f changes.Filter, c changes.Record) (changes.Record, bool) {
	if f.Tag != nil {
		in := c.Kind != changes.Deleted && c.Plant.Tag != nil && *c.Plant.Tag == *f.Tag
		switch {
		case !in && c.Kind == changes.Created:
			return c, false
		case !in:
			c = changes.Record{Kind: changes.Deleted, Plant: plant.Plant{ID: c.Plant.ID}}
		}
	}
	return c, len(f.Kinds) == 0 || slices.Contains(f.Kinds, c.Kind)
}

func spellFilter(f changes.Filter) string {
	types := make([]string, len(f.Kinds))
	for i, k := range f.Kinds {
		types[i] = k.String()
	}
	s := "types [" + strings.Join(types, " ") + "]"
	if f.Tag != nil {
		s = "tag " + fmt.Sprintf("%q ", *f.Tag) + s
	}
	return s
}

// Head is where a follower starting at now (the feed's after=now) starts:
// nothing of the history is after it, and the next change is.
func testHeadIsWhereNowStarts(t *testing.T, s Subject) {
	for id := int64(1); id <= 3; id++ {
		create(t, s.Plants, id)
	}
	now := head(t, s.Changes)
	if recs := read(t, s.Changes, now, 10); len(recs) != 0 {
		t.Fatalf("%d records after the head: %s", len(recs), spellAll(recs))
	}
	p := create(t, s.Plants, 4)
	recs := read(t, s.Changes, now, 10)
	if len(recs) != 1 || recs[0].Kind != changes.Created || !recs[0].Plant.Equal(p) {
		t.Fatalf("after the head, then a create: %s, want the create of plant 4 alone", spellAll(recs))
	}
}

// The same under concurrent writers, each on plants of its own, so that
// commits interleave (on postgres, commit order then need not be version
// order) while each plant's changes keep a known order: each plant's
// records, filtered, are exactly its changes as made, restricted, in the
// order made, and a mirror of a tag built from the whole log filtered
// holds exactly the store's plants of that tag.
func testFilteredHistoryUnderConcurrentWriters(t *testing.T, s Subject) {
	const writers, opsEach = 4, 40
	tags := []*string{nil, plant.StringPtr("a"), plant.StringPtr("b")}
	made := make([]map[int64][]changes.Record, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(40, uint64(w)+3)) //nolint:gosec // G404: a seeded sequence, the same on every run, not a secret
			mine, held := map[int64][]changes.Record{}, map[int64]bool{}
			for i := range opsEach {
				id := int64(w*100) + rng.Int64N(5) + 1
				p := plant.Plant{ID: id, Name: fmt.Sprintf("w%d-%d", w, i), Tag: tags[rng.IntN(len(tags))]}
				var err error
				rec := changes.Record{Kind: changes.Replaced, Plant: p}
				switch op := rng.IntN(3); {
				case !held[id]:
					rec.Kind = changes.Created
					_, err = s.Plants.Create(ctx, p)
					held[id] = true
				case op == 0:
					rec = changes.Record{Kind: changes.Deleted, Plant: plant.Plant{ID: id}}
					err = s.Plants.Delete(ctx, id)
					held[id] = false
				default:
					err = s.Plants.Replace(ctx, p, nil)
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s of plant %d: %w", rec.Kind, id, err)
					return
				}
				mine[id] = append(mine[id], rec)
			}
			made[w] = mine
		})
	}
	wg.Wait()
	total := 0
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, mine := range made {
		for _, recs := range mine {
			total += len(recs)
		}
	}
	recs := read(t, s.Changes, changes.Cursor{}, 1000)
	if len(recs) != total {
		t.Fatalf("%d records, %d changes made", len(recs), total)
	}
	for _, f := range []changes.Filter{
		{},
		{Tag: plant.StringPtr("a")},
		{Tag: plant.StringPtr("b"), Kinds: []changes.Kind{changes.Deleted}},
		{Kinds: []changes.Kind{changes.Replaced}},
		{Tag: plant.StringPtr("a"), Kinds: []changes.Kind{changes.Created, changes.Replaced}},
	} {
		got := map[int64][]string{}
		for _, rec := range recs {
			if r, ok := f.Apply(rec); ok {
				got[r.Plant.ID] = append(got[r.Plant.ID], show(r.Kind, r.Plant))
			}
		}
		for _, mine := range made {
			for id, recs := range mine {
				var want []string
				for _, rec := range recs {
					if r, ok := restrict(f, rec); ok {
						want = append(want, show(r.Kind, r.Plant))
					}
				}
				if !slices.Equal(got[id], want) {
					t.Errorf("filter %s, plant %d:\n got %q\nwant %q", spellFilter(f), id, got[id], want)
				}
			}
		}
	}
	versions := map[int64]int64{}
	mirror := map[int64]plant.Plant{}
	for _, rec := range recs {
		if rec.Version <= versions[rec.Plant.ID] {
			t.Fatalf("plant %d: version %d after %d", rec.Plant.ID, rec.Version, versions[rec.Plant.ID])
		}
		versions[rec.Plant.ID] = rec.Version
		if r, ok := (changes.Filter{Tag: plant.StringPtr("a")}).Apply(rec); ok && r.Kind == changes.Deleted {
			delete(mirror, r.Plant.ID)
		} else if ok {
			mirror[r.Plant.ID] = r.Plant
		}
	}
	listed, err := s.Plants.List(ctx, plant.ListQuery{Tag: plant.StringPtr("a"), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(mirror) || len(listed) == 0 {
		t.Fatalf("mirror of tag a holds %d plants, the store %d", len(mirror), len(listed))
	}
	for _, p := range listed {
		if m, ok := mirror[p.ID]; !ok || !m.Equal(p) {
			t.Fatalf("mirror of tag a: plant %d is %v, the store's %v", p.ID, m, p)
		}
	}
}
