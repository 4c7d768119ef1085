package changestest

import (
	"errors"
	"testing"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Step is one write of the script: its answer, and the change it commits
// (Kind 0: it changes nothing, so nothing is logged or announced).
type Step struct {
	Name          string
	write         func(s plant.Store) error
	answer        error
	Kind          changes.Kind
	Before, After plant.Plant
}

// Logged is the plant a change's record and event carry: the plant as it
// is, or the id alone for Deleted.
func (s Step) Logged() plant.Plant {
	if s.Kind == changes.Deleted {
		return plant.Plant{ID: s.Before.ID}
	}
	return s.After
}

// script is every kind of write, each committing a change or none: creates
// (identical and conflicting ones too), replaces with and without a match,
// deletes and conditional deletes, and a re-create of a deleted id.
func script() []Step {
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
	return []Step{
		{Name: "create 1", write: create(a1), Kind: changes.Created, After: a1},
		{Name: "identical re-create of 1", write: create(a1)},
		{Name: "conflicting create of 1", write: create(plant.Plant{ID: 1, Name: "other"}), answer: plant.ErrConflict},
		{Name: "replace 1", write: replace(b1, nil), Kind: changes.Replaced, Before: a1, After: b1},
		{Name: "identical replace of 1", write: replace(b1, nil)},
		{Name: "replace of 1 matching a stale plant", write: replace(c1, &a1), answer: plant.ErrPreconditionFailed},
		{Name: "replace of 1 matching it", write: replace(c1, &b1), Kind: changes.Replaced, Before: b1, After: c1},
		{Name: "identical replace of 1 matching it", write: replace(c1, &c1)},
		{Name: "replace of a missing plant", write: replace(d2, nil), answer: plant.ErrNotFound},
		{Name: "delete 1", write: del(1), Kind: changes.Deleted, Before: c1},
		{Name: "delete of a missing plant", write: del(1), answer: plant.ErrNotFound},
		{Name: "create 2", write: create(d2), Kind: changes.Created, After: d2},
		{Name: "delete of 2 matching a stale plant", write: delMatching(plant.Plant{ID: 2, Name: "x"}), answer: plant.ErrPreconditionFailed},
		{Name: "delete of 2 matching it", write: delMatching(d2), Kind: changes.Deleted, Before: d2},
		{Name: "delete matching of a missing plant", write: delMatching(d2), answer: plant.ErrNotFound},
		{Name: "re-create of 1", write: create(e1), Kind: changes.Created, After: e1},
	}
}

// run makes the write and checks its answer.
func (s Step) run(t *testing.T, plants plant.Store) {
	t.Helper()
	if err := s.write(plants); !errors.Is(err, s.answer) || (err == nil) != (s.answer == nil) {
		t.Fatalf("%s = %v, want %v", s.Name, err, s.answer)
	}
}

// RunScript makes every kind of write on plants, one at a time, each
// committing a change or none: creates (identical and conflicting ones
// too), replaces with and without a match, deletes and conditional
// deletes, and a re-create of a deleted id. It calls after (unless nil)
// with each step, and returns the steps that commit a change.
func RunScript(t *testing.T, plants plant.Store, after func(s Step)) []Step {
	t.Helper()
	var committed []Step
	for _, s := range script() {
		s.run(t, plants)
		if after != nil {
			after(s)
		}
		if s.Kind != 0 {
			committed = append(committed, s)
		}
	}
	return committed
}
