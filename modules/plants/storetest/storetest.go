// Package storetest is the conformance suite every plant.Store passes:
// memory, bolt and postgres run the same cases, so they behave alike. Run
// is its one entry: a store declares what it supports, and Run runs every
// suite that applies (the plant cases here, the durable ones, and the
// outbox's from outboxtest, the change log's from changestest).
package storetest

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// runPlants runs the plant cases. newStore returns an empty store for each
// subtest; the caller closes it (t.Cleanup).
func runPlants(t *testing.T, newStore func(t *testing.T) plant.Store) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, plant.Store)
	}{
		{"CreateThenGet", testCreateThenGet},
		{"IdenticalCreateSucceeds", testIdenticalCreate},
		{"ConflictingCreate", testConflictingCreate},
		{"CreateResults", testCreateResults},
		{"CreateResultAfterDelete", testCreateResultAfterDelete},
		{"ConcurrentIdenticalCreatesCreateOnce", testConcurrentIdenticalCreatesCreateOnce},
		{"GetMissing", testGetMissing},
		{"ListOrderAndPaging", testListOrderAndPaging},
		{"ListTagFilter", testListTagFilter},
		{"ListTagFilterNeighbours", testListTagFilterNeighbours},
		{"Delete", testDelete},
		{"ConcurrentCreates", testConcurrentCreates},
		{"ConcurrentCreatesOfOneID", testConcurrentCreatesOfOneID},
		{"ConcurrentConflictingCreates", testConcurrentConflictingCreates},
		{"ConcurrentCreateAndDelete", testConcurrentCreateAndDelete},
		{"DeleteLeavesTagFilter", testDeleteLeavesTagFilter},
		{"LargeNameAndTag", testLargeNameAndTag},
		{"Ping", func(t *testing.T, s plant.Store) {
			if err := s.Ping(context.Background()); err != nil {
				t.Fatalf("Ping = %v", err)
			}
		}},
	}
	cases = append(cases, updateCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has a store of its own
			c.fn(t, newStore(t))
		})
	}
}

var ctx = context.Background()

// mustCreate creates p, newly or identically, and returns what it did.
func mustCreate(t *testing.T, s plant.Store, p plant.Plant) plant.CreateResult {
	t.Helper()
	res, err := s.Create(ctx, p)
	if err != nil {
		t.Fatalf("Create(%+v) = %v", p, err)
	}
	return res
}

func assertGet(t *testing.T, s plant.Store, want plant.Plant) {
	t.Helper()
	got, err := s.Get(ctx, want.ID)
	if err != nil {
		t.Fatalf("Get(%d) = %v", want.ID, err)
	}
	if !got.Equal(want) {
		t.Fatalf("Get(%d) = %s, want %s", want.ID, show(got), show(want))
	}
}

func show(p plant.Plant) string {
	tag := "<none>"
	if p.Tag != nil {
		tag = "\"" + *p.Tag + "\""
	}
	return "{" + itoa(p.ID) + " \"" + p.Name + "\" " + tag + "}"
}

func testCreateThenGet(t *testing.T, s plant.Store) {
	plants := []plant.Plant{
		{ID: 1, Name: "fern", Tag: plant.StringPtr("green")},
		{ID: -1, Name: "cactus"},                                   // negative ids are valid
		{ID: math.MaxInt64, Name: "max"},                           // read back exactly
		{ID: math.MinInt64, Name: "min", Tag: plant.StringPtr("")}, // empty tag differs from none
		{ID: 0, Name: ""},                                          // empty name is valid
		{ID: 42, Name: "名前 🌱 \"quoted\" \\ \n", Tag: plant.StringPtr("ünïcode")},
	}
	for _, p := range plants {
		mustCreate(t, s, p)
	}
	for _, p := range plants {
		assertGet(t, s, p)
	}
}

func testIdenticalCreate(t *testing.T, s plant.Store) {
	p := plant.Plant{ID: 7, Name: "rose", Tag: plant.StringPtr("red")}
	mustCreate(t, s, p)
	mustCreate(t, s, p)
	noTag := plant.Plant{ID: 8, Name: "lily"}
	mustCreate(t, s, noTag)
	mustCreate(t, s, noTag)
	assertGet(t, s, p)
	assertGet(t, s, noTag)
}

func testConflictingCreate(t *testing.T, s plant.Store) {
	p := plant.Plant{ID: 7, Name: "rose", Tag: plant.StringPtr("red")}
	mustCreate(t, s, p)
	for _, other := range []plant.Plant{
		{ID: 7, Name: "tulip", Tag: plant.StringPtr("red")},
		{ID: 7, Name: "rose", Tag: plant.StringPtr("white")},
		{ID: 7, Name: "rose"},
		{ID: 7, Name: "rose", Tag: plant.StringPtr("")},
	} {
		if res, err := s.Create(ctx, other); !errors.Is(err, plant.ErrConflict) || res != 0 {
			t.Errorf("Create(%s) over %s = %v, %v; want none, ErrConflict", show(other), show(p), res, err)
		}
	}
	assertGet(t, s, p) // the original is untouched
}

func testGetMissing(t *testing.T, s plant.Store) {
	if _, err := s.Get(ctx, 99); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
}

func ids(ps []plant.Plant) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testListOrderAndPaging(t *testing.T, s plant.Store) {
	all := []int64{math.MinInt64, -300, -2, -1, 0, 1, 2, 255, 256, 1 << 40, math.MaxInt64}
	for i := len(all) - 1; i >= 0; i-- { // insert out of order
		mustCreate(t, s, plant.Plant{ID: all[i], Name: "p" + itoa(all[i])})
	}
	got, err := s.List(ctx, plant.ListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !equalIDs(ids(got), all) {
		t.Fatalf("List = %v, want %v (ascending, negatives first)", ids(got), all)
	}
	// Walk in pages of 3 with the cursor.
	var walked []int64
	var after *int64
	for {
		page, err := s.List(ctx, plant.ListQuery{After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, ids(page)...)
		if len(page) < 3 {
			break
		}
		last := page[len(page)-1].ID
		after = &last
	}
	if !equalIDs(walked, all) {
		t.Fatalf("paged walk = %v, want %v", walked, all)
	}
	// A cursor that is not a stored id still starts right after it.
	cursor := int64(100)
	page, err := s.List(ctx, plant.ListQuery{After: &cursor, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !equalIDs(ids(page), []int64{255, 256}) {
		t.Fatalf("List(after 100, limit 2) = %v, want [255 256]", ids(page))
	}
	maxID := int64(math.MaxInt64)
	page, err = s.List(ctx, plant.ListQuery{After: &maxID, Limit: 2})
	if err != nil || len(page) != 0 {
		t.Fatalf("List(after MaxInt64) = %v, %v; want empty", ids(page), err)
	}
}

func testListTagFilter(t *testing.T, s plant.Store) {
	for i := int64(1); i <= 10; i++ {
		p := plant.Plant{ID: i, Name: "p"}
		switch i % 3 {
		case 0:
			p.Tag = plant.StringPtr("fern")
		case 1:
			p.Tag = plant.StringPtr("")
		}
		mustCreate(t, s, p)
	}
	tag := "fern"
	got, err := s.List(ctx, plant.ListQuery{Tag: &tag, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !equalIDs(ids(got), []int64{3, 6}) {
		t.Fatalf("List(tag fern, limit 2) = %v, want [3 6]", ids(got))
	}
	after := int64(6)
	got, err = s.List(ctx, plant.ListQuery{Tag: &tag, After: &after, Limit: 10})
	if err != nil || !equalIDs(ids(got), []int64{9}) {
		t.Fatalf("List(tag fern, after 6) = %v, %v; want [9]", ids(got), err)
	}
	empty := ""
	got, err = s.List(ctx, plant.ListQuery{Tag: &empty, Limit: 10})
	if err != nil || !equalIDs(ids(got), []int64{1, 4, 7, 10}) {
		t.Fatalf("List(tag \"\") = %v, %v; want [1 4 7 10]", ids(got), err)
	}
}

// testListTagFilterNeighbours: tags that sort right next to the one asked
// for, or share its prefix, stay out of its pages, at every cursor.
func testListTagFilterNeighbours(t *testing.T, s plant.Store) {
	tags := []string{"fern", "fer", "fern ", "ferN", "ferm", "fern\u00e9", "fernz", "Fern", ""}
	for i, tag := range tags {
		for j := range int64(3) {
			id := j*100 - int64(i) // interleaved ids, negatives included
			mustCreate(t, s, plant.Plant{ID: id, Name: "p", Tag: plant.StringPtr(tag)})
		}
	}
	mustCreate(t, s, plant.Plant{ID: 1000, Name: "untagged"})
	for i, tag := range tags {
		want := []int64{-int64(i), 100 - int64(i), 200 - int64(i)}
		got, err := s.List(ctx, plant.ListQuery{Tag: &tag, Limit: 10})
		if err != nil || !equalIDs(ids(got), want) {
			t.Fatalf("List(tag %q) = %v, %v; want %v", tag, ids(got), err, want)
		}
		for k, after := range []int64{math.MinInt64, want[0] - 1, want[0], want[1], want[2], math.MaxInt64} {
			rest := want[min(max(k-1, 0), 3):]
			got, err := s.List(ctx, plant.ListQuery{Tag: &tag, After: &after, Limit: 10})
			if err != nil || !equalIDs(ids(got), rest) {
				t.Fatalf("List(tag %q, after %d) = %v, %v; want %v", tag, after, ids(got), err, rest)
			}
		}
	}
}

func testDelete(t *testing.T, s plant.Store) {
	p := plant.Plant{ID: 5, Name: "ivy"}
	mustCreate(t, s, p)
	if err := s.Delete(ctx, 5); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if _, err := s.Get(ctx, 5); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, 5); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("second Delete = %v, want ErrNotFound", err)
	}
	// The id is free again, with other content.
	mustCreate(t, s, plant.Plant{ID: 5, Name: "oak"})
	assertGet(t, s, plant.Plant{ID: 5, Name: "oak"})
}

func testConcurrentCreates(t *testing.T, s plant.Store) {
	const workers, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := int64(w*each + i)
				if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "p" + itoa(id)}); err != nil {
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
	got, err := s.List(ctx, plant.ListQuery{Limit: workers * each * 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != workers*each {
		t.Fatalf("List after concurrent creates has %d plants, want %d", len(got), workers*each)
	}
	for i, p := range got {
		if p.ID != int64(i) || p.Name != "p"+itoa(int64(i)) {
			t.Fatalf("plant %d = %s", i, show(p))
		}
	}
}

// testConcurrentCreatesOfOneID races creates of the same id, as clients
// retrying a lost answer do: identical ones all succeed, and among
// different ones exactly one wins while the others see ErrConflict.
func testConcurrentCreatesOfOneID(t *testing.T, s plant.Store) {
	const workers, rounds = 8, 20
	for round := range int64(rounds) {
		same := plant.Plant{ID: round, Name: "same", Tag: plant.StringPtr("t")}
		differentID := rounds + round
		results := make(chan error, 2*workers)
		won := make(chan plant.Plant, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				_, err := s.Create(ctx, same)
				results <- err
			})
			wg.Go(func() {
				p := plant.Plant{ID: differentID, Name: "worker " + itoa(int64(w))}
				_, err := s.Create(ctx, p)
				if err == nil {
					won <- p
				} else if !errors.Is(err, plant.ErrConflict) {
					results <- err
				}
			})
		}
		wg.Wait()
		close(results)
		close(won)
		for err := range results {
			if err != nil {
				t.Fatalf("round %d: concurrent Create = %v", round, err)
			}
		}
		var winners []plant.Plant
		for p := range won {
			winners = append(winners, p)
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d different creates of one id succeeded, want exactly 1", round, len(winners))
		}
		assertGet(t, s, same)
		assertGet(t, s, winners[0])
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
