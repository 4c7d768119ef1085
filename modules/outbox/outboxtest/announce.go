package outboxtest

import (
	"slices"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/changes/changestest"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Every committed change asks the plan, in its commit, with its kind and
// its plant before and after, and writes the plan's rows with its kind
// and version; a write that changes nothing writes none, whatever the plan
// gave for it. Versions increase with every change, of one plant too (a
// delete, then a re-create of its id), and the deliveries carry the
// versions and times their commits gave, as the change log records them.
func testEveryCommittedChangeIsAnnounced(t *testing.T, h harness) {
	h.w.next = planned{endpoints: []string{"a"}, describe: true}
	h.w.Asked()
	committed := changestest.RunScript(t, h.plants, func(s changestest.Step) {
		asked := h.w.Asked()
		if s.Kind == 0 {
			// A store that cannot tell before its statement runs may ask
			// for a change that then changes nothing; its rows are not
			// written (the claim below finds none).
			return
		}
		if len(asked) != 1 {
			t.Fatalf("%s: the plan was asked for %d changes %+v, want 1", s.Name, len(asked), asked)
		}
		c := asked[0]
		if c.Kind != s.Kind || !c.After.Equal(s.After) || !sameBefore(c.Before, s.Before) || c.Plant() != s.Logged().ID || c.Ctx == nil {
			t.Fatalf("%s: the plan was asked for %s before %s after %s (plant %d), want %s before %s after %s",
				s.Name, c.Kind, show(c.Before), show(c.After), c.Plant(), s.Kind, show(s.Before), show(s.After))
		}
	})
	ds := claimSoon(t, h.box, "a", len(committed), hour)
	if more := Claim(t, h.box, "a", 10, hour); len(more) != 0 {
		t.Fatalf("claimed %d deliveries beyond the %d changes: %s", len(more), len(committed), more[0].Body)
	}
	slices.SortFunc(ds, func(x, y outbox.Delivery) int { return int(x.Version - y.Version) })
	for i, d := range ds {
		s := committed[i]
		if d.Kind != s.Kind || string(d.Body) != string(describe(s.Kind, s.Logged())) || d.Attempt != 1 {
			t.Errorf("delivery %d: %s %s attempt %d, want %s %s attempt 1", i, d.Kind, d.Body, d.Attempt, s.Kind, describe(s.Kind, s.Logged()))
		}
		if i > 0 && (d.Version <= ds[i-1].Version || d.CreatedAt.Before(ds[i-1].CreatedAt)) {
			t.Errorf("delivery %d (%s): version %d at %v after version %d at %v: want a greater version, no earlier",
				i, s.Name, d.Version, d.CreatedAt, ds[i-1].Version, ds[i-1].CreatedAt)
		}
		if d.Version <= 0 || time.Since(d.CreatedAt) > time.Minute || time.Until(d.CreatedAt) > time.Minute {
			t.Errorf("delivery %d: version %d at %v, want a positive version, committed just now", i, d.Version, d.CreatedAt)
		}
	}
	if h.changes == nil {
		return
	}
	recs, err := h.changes.Changes(ctx, changes.Cursor{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(ds) {
		t.Fatalf("the change log holds %d records, want %d", len(recs), len(ds))
	}
	for i, d := range ds {
		if r := recs[i]; d.Version != r.Version || d.Kind != r.Kind || !d.CreatedAt.Equal(r.At) {
			t.Errorf("delivery %d: %s version %d at %v; its change was logged as %s version %d at %v", i, d.Kind, d.Version, d.CreatedAt, r.Kind, r.Version, r.At)
		}
	}
}

// sameBefore reports whether a change's Before is want, or want's id alone
// (from a store that does not read the plant it replaces or deletes).
func sameBefore(got, want plant.Plant) bool {
	return got.Equal(want) || got.Equal(plant.Plant{ID: want.ID})
}

// show spells p for failures.
func show(p plant.Plant) string { return string(describe(0, p)) }
