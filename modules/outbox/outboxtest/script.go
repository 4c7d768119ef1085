package outboxtest

import (
	"errors"
	"testing"

	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// step is one write of the script: its answer, and the change it commits
// (kind 0: it changes nothing, so nothing is logged or announced).
type step struct {
	name          string
	write         func(s plant.Store) error
	answer        error
	kind          outbox.Kind
	before, after plant.Plant
}

// logged is the plant a change's record and event carry: the plant as it
// is, or the id alone for Deleted.
func (s step) logged() plant.Plant {
	if s.kind == outbox.Deleted {
		return plant.Plant{ID: s.before.ID}
	}
	return s.after
}

// script is every kind of write, each committing a change or none: creates
// (identical and conflicting ones too), replaces with and without a match,
// deletes and conditional deletes, and a re-create of a deleted id.
func script() []step {
	a1 := plant.Plant{ID: 1, Name: "a"}
	b1 := plant.Plant{ID: 1, Name: "b", Tag: plant.StringPtr("t")}
	c1 := plant.Plant{ID: 1, Name: "c"}
	d2 := plant.Plant{ID: 2, Name: "d", Tag: plant.StringPtr("u")}
	e1 := plant.Plant{ID: 1, Name: "e", Tag: plant.StringPtr("")}
	create := func(p plant.Plant) func(plant.Store) error {
		return func(s plant.Store) error { _, err := s.Create(ctx, p); return err }
	}
	replace := func(p plant.Plant, match *plant.Plant) func(plant.Store) error {
		return func(s plant.Store) error { return s.Replace(ctx, p, match) }
	}
	del := func(id int64) func(plant.Store) error {
		return func(s plant.Store) error { return s.Delete(ctx, id) }
	}
	delMatching := func(p plant.Plant) func(plant.Store) error {
		return func(s plant.Store) error { return s.DeleteMatching(ctx, p) }
	}
	return []step{
		{name: "create 1", write: create(a1), kind: outbox.Created, after: a1},
		{name: "identical re-create of 1", write: create(a1)},
		{name: "conflicting create of 1", write: create(plant.Plant{ID: 1, Name: "other"}), answer: plant.ErrConflict},
		{name: "replace 1", write: replace(b1, nil), kind: outbox.Replaced, before: a1, after: b1},
		{name: "identical replace of 1", write: replace(b1, nil)},
		{name: "replace of 1 matching a stale plant", write: replace(c1, &a1), answer: plant.ErrPreconditionFailed},
		{name: "replace of 1 matching it", write: replace(c1, &b1), kind: outbox.Replaced, before: b1, after: c1},
		{name: "identical replace of 1 matching it", write: replace(c1, &c1)},
		{name: "replace of a missing plant", write: replace(d2, nil), answer: plant.ErrNotFound},
		{name: "delete 1", write: del(1), kind: outbox.Deleted, before: c1},
		{name: "delete of a missing plant", write: del(1), answer: plant.ErrNotFound},
		{name: "create 2", write: create(d2), kind: outbox.Created, after: d2},
		{name: "delete of 2 matching a stale plant", write: delMatching(plant.Plant{ID: 2, Name: "x"}), answer: plant.ErrPreconditionFailed},
		{name: "delete of 2 matching it", write: delMatching(d2), kind: outbox.Deleted, before: d2},
		{name: "delete matching of a missing plant", write: delMatching(d2), answer: plant.ErrNotFound},
		{name: "re-create of 1", write: create(e1), kind: outbox.Created, after: e1},
	}
}

// run makes the write and checks its answer.
func (s step) run(t *testing.T, plants plant.Store) {
	t.Helper()
	if err := s.write(plants); !errors.Is(err, s.answer) || (err == nil) != (s.answer == nil) {
		t.Fatalf("%s = %v, want %v", s.name, err, s.answer)
	}
}

// runScript runs every step of script on plants, one at a time, calling
// after (unless nil) with each, and returns the steps that commit a change.
func runScript(t *testing.T, plants plant.Store, after func(s step)) []step {
	t.Helper()
	var changes []step
	for _, s := range script() {
		s.run(t, plants)
		if after != nil {
			after(s)
		}
		if s.kind != 0 {
			changes = append(changes, s)
		}
	}
	return changes
}
