package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Cases beyond the basics: races on one id and between creates and
// deletes, the tag filter kept in step with them, and large values.

// testConcurrentConflictingCreates: clients creating different plants,
// tagged and untagged, under one id at once: exactly one wins, every other
// gets ErrConflict, the winner's plant is what is stored, and only the
// winner's tag lists it. Each round uses a fresh id.
func testConcurrentConflictingCreates(t *testing.T, s plant.Store) {
	const rounds, clients = 20, 8
	for round := range int64(rounds) {
		errs := make([]error, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				p := plant.Plant{ID: round, Name: "client" + itoa(int64(i))}
				if i%2 == 1 { // tagged and untagged contenders, and the index with them
					p.Tag = plant.StringPtr(contenderTag(round, i))
				}
				_, errs[i] = s.Create(ctx, p)
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: clients %d and %d both created id %d", round, winner, i, round)
			case err == nil:
				winner = i
			case !errors.Is(err, plant.ErrConflict):
				t.Fatalf("round %d: client %d: Create = %v, want nil or ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no client created id %d", round, round)
		}
		got, err := s.Get(ctx, round)
		if err != nil || got.Name != "client"+itoa(int64(winner)) {
			t.Fatalf("round %d: Get = %s, %v; want the winner, client %d", round, show(got), err, winner)
		}
		for i := 1; i < clients; i += 2 {
			want := []int64(nil)
			if i == winner {
				want = []int64{round}
			}
			assertList(t, s, plant.ListQuery{Tag: plant.StringPtr(contenderTag(round, i)), Limit: 10}, want)
		}
	}
}

func contenderTag(round int64, client int) string { return itoa(round) + "/" + itoa(int64(client)) }

// testConcurrentCreateAndDelete: creates and deletes of disjoint ids from
// many goroutines leave exactly the plants that were not deleted.
func testConcurrentCreateAndDelete(t *testing.T, s plant.Store) {
	const workers, each = 8, 20
	tag := "churn"
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := int64(w*each + i)
				if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "p", Tag: &tag}); err != nil {
					errs <- err
				}
				if id%2 == 0 {
					if err := s.Delete(ctx, id); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Create/Delete: %v", err)
	}
	var odd []int64
	for id := int64(1); id < workers*each; id += 2 {
		odd = append(odd, id)
	}
	assertList(t, s, plant.ListQuery{Limit: workers * each}, odd)
	assertList(t, s, plant.ListQuery{Tag: &tag, Limit: workers * each}, odd)
}

// testDeleteLeavesTagFilter: a deleted plant leaves its tag's list, and
// the id re-created under another tag shows under that tag only.
func testDeleteLeavesTagFilter(t *testing.T, s plant.Store) {
	red, white := "red", "white"
	mustCreate(t, s, plant.Plant{ID: 1, Name: "rose", Tag: &red})
	mustCreate(t, s, plant.Plant{ID: 2, Name: "poppy", Tag: &red})
	if err := s.Delete(ctx, 1); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	assertList(t, s, plant.ListQuery{Tag: &red, Limit: 10}, []int64{2})
	mustCreate(t, s, plant.Plant{ID: 1, Name: "rose", Tag: &white})
	assertList(t, s, plant.ListQuery{Tag: &red, Limit: 10}, []int64{2})
	assertList(t, s, plant.ListQuery{Tag: &white, Limit: 10}, []int64{1})
	if err := s.Delete(ctx, 1); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	mustCreate(t, s, plant.Plant{ID: 1, Name: "rose"})
	assertList(t, s, plant.ListQuery{Tag: &white, Limit: 10}, nil)
}

// testLargeNameAndTag: a name and tags as large as a 1 MiB request body
// allows are stored, compared and filtered on exactly, two tags that differ
// only in their last byte included. (Failures report sizes, not values.)
func testLargeNameAndTag(t *testing.T, s plant.Store) {
	name := strings.Repeat("n", 512<<10)
	tag := strings.Repeat("t", 256<<10)
	longer := tag + "t"
	p := plant.Plant{ID: 3, Name: name, Tag: &tag}
	for range 2 { // the second is an identical retry
		if _, err := s.Create(ctx, p); err != nil {
			t.Fatalf("Create with a %d-byte name and a %d-byte tag = %v", len(name), len(tag), err)
		}
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 3, Name: name, Tag: &longer}); !errors.Is(err, plant.ErrConflict) {
		t.Fatalf("Create with a tag one byte longer = %v, want ErrConflict", err)
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 4, Name: "other", Tag: &longer}); err != nil {
		t.Fatalf("Create of another plant with the longer tag = %v", err)
	}
	got, err := s.Get(ctx, 3)
	if err != nil || !got.Equal(p) {
		t.Fatalf("Get = %d-byte name, tag %v, %v; want the %d-byte name and %d-byte tag",
			len(got.Name), got.Tag != nil, err, len(name), len(tag))
	}
	assertList(t, s, plant.ListQuery{Tag: &tag, Limit: 10}, []int64{3})
	assertList(t, s, plant.ListQuery{Tag: &longer, Limit: 10}, []int64{4})
}

// assertList checks the ids a query returns.
func assertList(t *testing.T, s plant.Store, q plant.ListQuery, want []int64) {
	t.Helper()
	got, err := s.List(ctx, q)
	if err != nil {
		t.Fatalf("List(%s) = %v", showQuery(q), err)
	}
	if !equalIDs(ids(got), want) {
		t.Fatalf("List(%s) = %v, want %v", showQuery(q), ids(got), want)
	}
}

func showQuery(q plant.ListQuery) string {
	var b strings.Builder
	b.WriteString("limit " + itoa(int64(q.Limit)))
	if q.After != nil {
		b.WriteString(", after " + itoa(*q.After))
	}
	if q.Tag != nil {
		tag := *q.Tag
		if len(tag) > 20 {
			tag = tag[:20] + "..." + itoa(int64(len(tag))) + " bytes"
		}
		b.WriteString(", tag \"" + tag + "\"")
	}
	return b.String()
}
