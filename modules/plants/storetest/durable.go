package storetest

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// runDurable runs the cases only a durable store passes: what a store
// acknowledged is there after it is closed and opened again. newData makes
// empty storage for one subtest and returns how to open it; each call of
// open returns a new store on that same storage, which the suite closes.
func runDurable(t *testing.T, newData func(t *testing.T) (open func(t *testing.T) plant.Store)) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, func(*testing.T) plant.Store)
	}{
		{"ReopenReadsBack", testReopenReadsBack},
		{"ConcurrentCreatesSurviveReopen", testConcurrentCreatesSurviveReopen},
		{"UseAfterClose", testUseAfterClose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newData(t)) })
	}
}

func mustClose(t *testing.T, s plant.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
}

func testReopenReadsBack(t *testing.T, open func(*testing.T) plant.Store) {
	plants := []plant.Plant{
		{ID: math.MinInt64, Name: "min", Tag: plant.StringPtr("")},
		{ID: -1, Name: "minus one", Tag: plant.StringPtr("x")},
		{ID: 0, Name: ""},
		{ID: 1, Name: "名前 🌱", Tag: plant.StringPtr("x")},
		{ID: math.MaxInt64, Name: "max", Tag: plant.StringPtr("y")},
	}
	s := open(t)
	for _, p := range plants {
		mustCreate(t, s, p)
	}
	mustCreate(t, s, plant.Plant{ID: 5, Name: "deleted", Tag: plant.StringPtr("x")})
	if err := s.Delete(ctx, 5); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	mustClose(t, s)

	s = open(t)
	defer mustClose(t, s)
	for _, p := range plants {
		assertGet(t, s, p)
	}
	if _, err := s.Get(ctx, 5); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get(deleted) after reopen = %v, want ErrNotFound", err)
	}
	assertList(t, s, plant.ListQuery{Limit: 10}, ids(plants))
	assertList(t, s, plant.ListQuery{Tag: plant.StringPtr("x"), Limit: 10}, []int64{-1, 1})
	assertList(t, s, plant.ListQuery{Tag: plant.StringPtr(""), Limit: 10}, []int64{math.MinInt64})
	if res := mustCreate(t, s, plants[1]); res != plant.Unchanged { // identical: still succeeds, and writes nothing
		t.Fatalf("identical Create after reopen = %v, want unchanged", res)
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "other"}); !errors.Is(err, plant.ErrConflict) {
		t.Fatalf("conflicting Create after reopen = %v, want ErrConflict", err)
	}
}

func testConcurrentCreatesSurviveReopen(t *testing.T, open func(*testing.T) plant.Store) {
	const workers, each = 16, 25
	s := open(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := int64(w*each + i)
				p := plant.Plant{ID: id, Name: "p" + itoa(id)}
				if id%3 == 0 {
					p.Tag = plant.StringPtr("third")
				}
				if _, err := s.Create(ctx, p); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Create: %v", err)
	}
	mustClose(t, s)

	s = open(t)
	defer mustClose(t, s)
	got, err := s.List(ctx, plant.ListQuery{Limit: workers * each * 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != workers*each {
		t.Fatalf("after reopen List has %d plants, want %d", len(got), workers*each)
	}
	var thirds []int64
	for i, p := range got {
		want := plant.Plant{ID: int64(i), Name: "p" + itoa(int64(i))}
		if i%3 == 0 {
			want.Tag = plant.StringPtr("third")
			thirds = append(thirds, want.ID)
		}
		if !p.Equal(want) {
			t.Fatalf("after reopen plant %d = %s, want %s", i, show(p), show(want))
		}
	}
	assertList(t, s, plant.ListQuery{Tag: plant.StringPtr("third"), Limit: workers * each}, thirds)
}

// testUseAfterClose: a closed store answers errors, not panics or hangs.
func testUseAfterClose(t *testing.T, open func(*testing.T) plant.Store) {
	s := open(t)
	mustCreate(t, s, plant.Plant{ID: 1, Name: "p"})
	mustClose(t, s)
	if _, err := s.Create(ctx, plant.Plant{ID: 2, Name: "p"}); err == nil {
		t.Error("Create after Close = nil, want an error")
	}
	if err := s.Delete(ctx, 1); err == nil {
		t.Error("Delete after Close = nil, want an error")
	}
	if _, err := s.Get(ctx, 1); err == nil {
		t.Error("Get after Close = nil error, want an error")
	}
	if _, err := s.List(ctx, plant.ListQuery{Limit: 1}); err == nil {
		t.Error("List after Close = nil error, want an error")
	}
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping after Close = nil, want an error")
	}
}
