package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// updateCases are the conformance cases of Replace and DeleteMatching.
var updateCases = []struct {
	name string
	fn   func(*testing.T, plant.Store)
}{
	{"UpdateReplacesNameAndTag", testUpdateReplaces},
	{"UpdateMissing", testUpdateMissing},
	{"UpdateMatching", testUpdateMatching},
	{"UpdateMovesTagFilter", testUpdateMovesTagFilter},
	{"CreateAfterUpdateComparesCurrent", testCreateAfterUpdate},
	{"ConcurrentMatchingUpdatesOneWins", testConcurrentMatchingUpdates},
	{"DeleteMatching", testDeleteMatching},
	{"ConcurrentMatchingDeleteAndUpdateOneWins", testConcurrentMatchingDeleteAndUpdate},
}

func testUpdateReplaces(t *testing.T, s plant.Store) {
	mustCreate(t, s, plant.Plant{ID: 1, Name: "Monstera", Tag: plant.StringPtr("tropical")})
	steps := []plant.Plant{
		{ID: 1, Name: "Monstera deliciosa", Tag: plant.StringPtr("tropical")},
		{ID: 1, Name: "Monstera deliciosa"},                        // a tag left out is removed
		{ID: 1, Name: "", Tag: plant.StringPtr("")},                // empty name, empty tag: both kept
		{ID: 1, Name: "", Tag: plant.StringPtr("")},                // the same again changes nothing
		{ID: 1, Name: "Ficus ☘ 🌿", Tag: plant.StringPtr("indoor")}, // unicode
	}
	for _, p := range steps {
		if err := s.Replace(ctx, p, nil); err != nil {
			t.Fatalf("Replace(%s) = %v", show(p), err)
		}
		assertGet(t, s, p)
	}
}

func testUpdateMissing(t *testing.T, s plant.Store) {
	p := plant.Plant{ID: 5, Name: "never created"}
	if err := s.Replace(ctx, p, nil); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Replace of a missing plant = %v, want ErrNotFound", err)
	}
	if err := s.Replace(ctx, p, &p); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("matching Replace of a missing plant = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, 5); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Update created the plant: Get = %v", err)
	}
}

func testUpdateMatching(t *testing.T, s plant.Store) {
	v1 := plant.Plant{ID: -3, Name: "a", Tag: plant.StringPtr("")}
	mustCreate(t, s, v1)
	v2 := plant.Plant{ID: -3, Name: "b"}
	if err := s.Replace(ctx, v2, &v1); err != nil {
		t.Fatalf("Replace matching the stored plant = %v", err)
	}
	// v1 is stale now, and so is a match that differs only in having no tag.
	for _, stale := range []plant.Plant{v1, {ID: -3, Name: "a"}, {ID: -3, Name: "b", Tag: plant.StringPtr("")}} {
		if err := s.Replace(ctx, plant.Plant{ID: -3, Name: "c"}, &stale); !errors.Is(err, plant.ErrPreconditionFailed) {
			t.Fatalf("Replace matching stale %s = %v, want ErrPreconditionFailed", show(stale), err)
		}
	}
	assertGet(t, s, v2)
}

func testUpdateMovesTagFilter(t *testing.T, s plant.Store) {
	mustCreate(t, s, plant.Plant{ID: 1, Name: "a", Tag: plant.StringPtr("x")})
	mustCreate(t, s, plant.Plant{ID: 2, Name: "b", Tag: plant.StringPtr("x")})
	if err := s.Replace(ctx, plant.Plant{ID: 1, Name: "a", Tag: plant.StringPtr("y")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(ctx, plant.Plant{ID: 2, Name: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	assertList(t, s, plant.ListQuery{Tag: plant.StringPtr("x"), Limit: 10}, []int64{})
	assertList(t, s, plant.ListQuery{Tag: plant.StringPtr("y"), Limit: 10}, []int64{1})
	assertList(t, s, plant.ListQuery{Limit: 10}, []int64{1, 2})
}

// An identical re-create compares with what is stored now: after an
// update, the original body is a conflict and the new content a retry.
func testCreateAfterUpdate(t *testing.T, s plant.Store) {
	old := plant.Plant{ID: 9, Name: "old", Tag: plant.StringPtr("t")}
	mustCreate(t, s, old)
	updated := plant.Plant{ID: 9, Name: "new"}
	if err := s.Replace(ctx, updated, nil); err != nil {
		t.Fatal(err)
	}
	assertCreate(t, s, old, 0, plant.ErrConflict)
	assertCreate(t, s, updated, plant.Unchanged, nil)
}

// Clients that all read one state and write against it: exactly one
// succeeds, every other one is told its precondition failed.
func testConcurrentMatchingUpdates(t *testing.T, s plant.Store) {
	const rounds, clients = 20, 8
	for round := range int64(rounds) {
		read := plant.Plant{ID: round, Name: "start"}
		mustCreate(t, s, read)
		var wg sync.WaitGroup
		errs := make([]error, clients)
		for c := range clients {
			wg.Go(func() {
				errs[c] = s.Replace(ctx, plant.Plant{ID: round, Name: contenderTag(round, c)}, &read)
			})
		}
		wg.Wait()
		winner := -1
		for c, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: clients %d and %d both updated against one state", round, winner, c)
			case err == nil:
				winner = c
			case !errors.Is(err, plant.ErrPreconditionFailed):
				t.Fatalf("round %d: client %d: Replace = %v, want nil or ErrPreconditionFailed", round, c, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no replace succeeded", round)
		}
		assertGet(t, s, plant.Plant{ID: round, Name: contenderTag(round, winner)})
	}
}

func testDeleteMatching(t *testing.T, s plant.Store) {
	p := plant.Plant{ID: 4, Name: "a", Tag: plant.StringPtr("x")}
	mustCreate(t, s, p)
	if err := s.DeleteMatching(ctx, plant.Plant{ID: 4, Name: "a"}); !errors.Is(err, plant.ErrPreconditionFailed) {
		t.Fatalf("DeleteMatching a stale plant = %v, want ErrPreconditionFailed", err)
	}
	assertGet(t, s, p)
	if err := s.DeleteMatching(ctx, p); err != nil {
		t.Fatalf("DeleteMatching = %v", err)
	}
	if err := s.DeleteMatching(ctx, p); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("DeleteMatching again = %v, want ErrNotFound", err)
	}
	assertList(t, s, plant.ListQuery{Tag: plant.StringPtr("x"), Limit: 10}, []int64{})
}

// A delete and an update made against one state: one of them wins.
func testConcurrentMatchingDeleteAndUpdate(t *testing.T, s plant.Store) {
	for round := range int64(20) {
		read := plant.Plant{ID: round, Name: "start"}
		mustCreate(t, s, read)
		var wg sync.WaitGroup
		var updateErr, deleteErr error
		wg.Go(func() { updateErr = s.Replace(ctx, plant.Plant{ID: round, Name: "updated"}, &read) })
		wg.Go(func() { deleteErr = s.DeleteMatching(ctx, read) })
		wg.Wait()
		switch {
		case updateErr == nil && errors.Is(deleteErr, plant.ErrPreconditionFailed):
			assertGet(t, s, plant.Plant{ID: round, Name: "updated"})
		case deleteErr == nil && (errors.Is(updateErr, plant.ErrPreconditionFailed) || errors.Is(updateErr, plant.ErrNotFound)):
			if _, err := s.Get(ctx, round); !errors.Is(err, plant.ErrNotFound) {
				t.Fatalf("round %d: deleted, but Get = %v", round, err)
			}
		default:
			t.Fatalf("round %d: Replace = %v, DeleteMatching = %v; want exactly one to succeed", round, updateErr, deleteErr)
		}
	}
}
