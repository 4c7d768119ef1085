package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// testCreateResults: a create says what it did. A new plant is Created, an
// identical re-create Unchanged (however often, tagged or not, the empty
// tag too), a conflicting one no result and ErrConflict.
func testCreateResults(t *testing.T, s plant.Store) {
	for _, p := range []plant.Plant{
		{ID: 1, Name: "rose", Tag: plant.StringPtr("red")},
		{ID: 2, Name: "lily"},
		{ID: 3, Name: "moss", Tag: plant.StringPtr("")},
	} {
		assertCreate(t, s, p, plant.Created, nil)
		assertCreate(t, s, p, plant.Unchanged, nil)
		assertCreate(t, s, p, plant.Unchanged, nil)
		assertCreate(t, s, plant.Plant{ID: p.ID, Name: "other"}, 0, plant.ErrConflict)
		assertGet(t, s, p)
	}
}

// testCreateResultAfterDelete: a deleted id is free, so creating it again,
// even with the content it had, is a creation.
func testCreateResultAfterDelete(t *testing.T, s plant.Store) {
	p := plant.Plant{ID: 9, Name: "fern", Tag: plant.StringPtr("green")}
	assertCreate(t, s, p, plant.Created, nil)
	if err := s.Delete(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	assertCreate(t, s, p, plant.Created, nil)
	assertCreate(t, s, p, plant.Unchanged, nil)
}

// testConcurrentIdenticalCreatesCreateOnce: among clients creating the same
// new plant at once (a retry racing its original), exactly one is told
// Created and every other Unchanged, so a creation is counted (and later
// announced) once.
func testConcurrentIdenticalCreatesCreateOnce(t *testing.T, s plant.Store) {
	const rounds, clients = 20, 8
	for round := range int64(rounds) {
		p := plant.Plant{ID: round, Name: "same", Tag: plant.StringPtr("t")}
		results := make([]plant.CreateResult, clients)
		errs := make([]error, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() { results[i], errs[i] = s.Create(ctx, p) })
		}
		wg.Wait()
		created := 0
		for i := range clients {
			switch {
			case errs[i] != nil:
				t.Fatalf("round %d: client %d: Create = %v", round, i, errs[i])
			case results[i] == plant.Created:
				created++
			case results[i] != plant.Unchanged:
				t.Fatalf("round %d: client %d: Create = %v, want created or unchanged", round, i, results[i])
			}
		}
		if created != 1 {
			t.Fatalf("round %d: %d of %d identical creates were told created, want exactly 1", round, created, clients)
		}
		assertGet(t, s, p)
	}
}

func assertCreate(t *testing.T, s plant.Store, p plant.Plant, wantRes plant.CreateResult, wantErr error) {
	t.Helper()
	res, err := s.Create(ctx, p)
	if res != wantRes || !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
		t.Fatalf("Create(%s) = %v, %v; want %v, %v", show(p), res, err, wantRes, wantErr)
	}
}
