package main

// Walks through the plants by pages, following the Link headers, while
// plants are created and deleted between and during the page fetches. A
// walker must see every plant that exists throughout its walk exactly once,
// in ascending id order, and nothing that never existed.

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// walkShape is how many plants a walk test seeds and the page size it walks
// them with. What a walk proves comes from its pages, some 80 of them, not
// from the number of plants: each page boundary is a cursor next to which a
// change could make the walker skip a plant or see one twice. So the shapes
// are small pages over few plants (seeding 10,000 plants, for pages of 137,
// cost the walk tests most of their time). The limits are primes that
// divide nothing here, so pages end anywhere.
type walkShape struct {
	plants, limit int
}

// walkSeedIDs are the plants every walk starts with: every tenth id from
// -5·plants to 5·plants-10, leaving room between them and crossing zero,
// so that a store must also order negative ids first.
func (shape walkShape) walkSeedIDs() []int64 {
	ids := make([]int64, shape.plants)
	for i := range ids {
		ids[i] = int64(i-shape.plants/2) * 10
	}
	return ids
}

// A walk plant's name and tag follow from its id, so that any plant a walker
// sees can be checked whoever created it. Tags: "a", "b", none, "".
func walkName(id int64) string { return "plant " + strconv.FormatInt(id, 10) }

func walkTag(id int64) *string {
	tags := [...]*string{ptr("a"), ptr("b"), nil, ptr("")}
	return tags[((id%4)+4)%4]
}

func ptr(s string) *string { return &s }

func walkBody(id int64) string {
	body := `{"id":` + strconv.FormatInt(id, 10) + `,"name":"` + walkName(id) + `"`
	if tag := walkTag(id); tag != nil {
		body += `,"tag":"` + *tag + `"`
	}
	return body + "}"
}

// seedWalk creates the plants through the API's bulk import (importAll),
// where ten thousand single creates cost the walk tests most of their time.
// The walks check each plant's name and tag.
func seedWalk(t *testing.T, s *testServer, ids []int64) {
	t.Helper()
	bodies := make([]string, len(ids))
	for i, id := range ids {
		bodies[i] = walkBody(id)
	}
	importAll(t, s, bodies)
}

// walk lists all pages of shape.limit plants (only those tagged tag, when not
// nil) by following Link headers and returns the ids in the order seen.
// It checks every page: each plant's name and tag, exactly shape.limit plants
// on a page that links on, and the exact Link. before, when not nil, runs
// before each page is fetched, with the cursor (the last id of the page
// before; nil for the first page); it may start work that goes on during
// the fetch, and returns a func that waits for that work.
func walk(t *testing.T, s *testServer, shape walkShape, tag *string, before func(after *int64) (wait func())) []int64 {
	t.Helper()
	tagParam := ""
	if tag != nil {
		tagParam = "&tag=" + url.QueryEscape(*tag)
	}
	var seen []int64
	var after *int64
	path := "/plants?limit=" + strconv.Itoa(shape.limit) + tagParam
	for page := 0; ; page++ {
		if page > 2*shape.plants/shape.limit+10 {
			t.Fatalf("the walk goes on past %d pages", page)
		}
		wait := func() {}
		if before != nil {
			wait = before(after)
		}
		r := s.get(t, path)
		wait()
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, r.Status, r.Body)
		}
		var plants []struct {
			ID   int64   `json:"id"`
			Name string  `json:"name"`
			Tag  *string `json:"tag"`
		}
		r.JSON(t, &plants)
		for _, p := range plants {
			if want := walkTag(p.ID); p.Name != walkName(p.ID) || !sameTag(p.Tag, want) || (tag != nil && !sameTag(p.Tag, tag)) {
				t.Fatalf("GET %s: plant %d is %q tag %v, want %q tag %v", path, p.ID, p.Name, show(p.Tag), walkName(p.ID), show(want))
			}
			seen = append(seen, p.ID)
		}
		next := nextPath(t, r)
		if next == "" {
			break
		}
		if len(plants) != shape.limit {
			t.Fatalf("GET %s: %d plants and a Link, want a full page of %d", path, len(plants), shape.limit)
		}
		last := plants[len(plants)-1].ID
		after = &last
		if want := fmt.Sprintf(`</plants?after=%d&limit=%d%s>; rel="next"`, last, shape.limit, tagParam); r.Header.Get("Link") != want {
			t.Fatalf("GET %s: Link %q, want %q", path, r.Header.Get("Link"), want)
		}
		path = next
	}
	return seen
}

func sameTag(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(tag *string) string {
	if tag == nil {
		return "<none>"
	}
	return strconv.Quote(*tag)
}

// assertWalk checks that seen is strictly ascending (so no plant twice),
// contains every id of mustSee, and nothing outside mayExist.
func assertWalk(t *testing.T, seen, mustSee []int64, mayExist map[int64]bool) {
	t.Helper()
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("walk saw %d after %d: not in ascending order, or twice", seen[i], seen[i-1])
		}
	}
	for _, id := range seen {
		if !mayExist[id] {
			t.Fatalf("walk saw plant %d, which never existed", id)
		}
	}
	for _, id := range mustSee {
		if _, found := slices.BinarySearch(seen, id); !found {
			t.Fatalf("walk missed plant %d, which existed throughout it", id)
		}
	}
}

// assertSameIDs fails at the first place where seen differs from want.
func assertSameIDs(t *testing.T, what string, seen, want []int64) {
	t.Helper()
	for i := range max(len(seen), len(want)) {
		switch {
		case i == len(seen):
			t.Fatalf("%s ended after %d plants, before plant %d", what, i, want[i])
		case i == len(want):
			t.Fatalf("%s saw plant %d after the %d it should see", what, seen[i], i)
		case seen[i] != want[i]:
			t.Fatalf("%s saw plant %d where plant %d should be (position %d)", what, seen[i], want[i], i)
		}
	}
}

func sortedKeys(m map[int64]bool) []int64 {
	ids := make([]int64, 0, len(m))
	for id, ok := range m {
		if ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestWalkInterleaved(t *testing.T) {
	t.Parallel()
	testWalkInterleaved(t, testConfig(t))
}

// walkInterleaved: 1,000 plants in pages of 13, 77 pages.
var walkInterleaved = walkShape{plants: 1_000, limit: 13}

// testWalkInterleaved changes the store between pages in the three ways that
// break offset paging, so it knows exactly what the walk must see: before
// each page it creates a plant after the cursor (to be seen), creates one
// before it (not to be seen: the walk is past it) and deletes a seeded
// plant after it (not to be seen: gone before the walk got there).
func testWalkInterleaved(t *testing.T, cfg config) {
	shape := walkInterleaved
	s := startServer(t, cfg)
	seedWalk(t, s, shape.walkSeedIDs())
	stored := make(map[int64]bool, shape.plants+200) // what the store holds
	for _, id := range shape.walkSeedIDs() {
		stored[id] = true
	}
	wantSeen := maps.Clone(stored)

	seen := walk(t, s, shape, nil, func(after *int64) func() {
		if after == nil {
			return func() {}
		}
		// Seeded ids are multiples of ten; creates here end in 5 (ahead)
		// and in 2 or 7 (behind), so they never meet a seeded id or each other.
		base := *after - ((*after%10)+10)%10
		ahead, behind, gone := base+15, *after-3, base+20
		for _, id := range []int64{ahead, behind} {
			if r := s.post(t, walkBody(id)); r.Status != http.StatusOK {
				t.Fatalf("create %d = %d %s", id, r.Status, r.Body)
			}
			stored[id] = true
		}
		wantSeen[ahead] = true
		if stored[gone] {
			if r := s.delete(t, "/plants/"+strconv.FormatInt(gone, 10)); r.Status != http.StatusNoContent {
				t.Fatalf("delete %d = %d %s", gone, r.Status, r.Body)
			}
			delete(stored, gone)
			delete(wantSeen, gone)
		}
		return func() {}
	})
	assertSameIDs(t, "walk", seen, sortedKeys(wantSeen))

	// At rest, a walk by tag sees exactly the stored plants with that tag.
	for _, tag := range []*string{ptr("a"), ptr("")} {
		var want []int64
		for _, id := range sortedKeys(stored) {
			if sameTag(walkTag(id), tag) {
				want = append(want, id)
			}
		}
		assertSameIDs(t, "walk with tag "+show(tag), walk(t, s, shape, tag, nil), want)
	}
}

// walkConcurrent: 5,000 plants in pages of 67, some 80 pages with the
// creates. Not fewer plants in smaller pages: every fifth seeded plant is
// one the deleter may delete, and it makes about a third of the 30 writes
// of each page, some 850 in all; a seed of 5,000 has 1,000 for it, so it
// deletes during every page.
var walkConcurrent = walkShape{plants: 5_000, limit: 67}

func TestWalkConcurrent(t *testing.T) {
	t.Parallel()
	testWalkConcurrent(t, testConfig(t))
}

// testWalkConcurrent walks while three other clients write: two create
// plants inside the walked range and outside it, one deletes seeded plants
// from a fixed set. Writes are handed out in batches before each page and
// run while the page is fetched; the next page waits for the batch, so
// every page overlaps writes and the load stays bounded. The plants that
// must be seen are the seeded ones never deleted, which exist throughout.
func testWalkConcurrent(t *testing.T, cfg config) {
	shape := walkConcurrent
	s := startServer(t, cfg)
	seeded := shape.walkSeedIDs()
	seedWalk(t, s, seeded)

	rng := rand.New(rand.NewPCG(4, 137)) // fixed: a failure can be replayed
	var stable, deletable []int64
	mayExist := make(map[int64]bool, 2*shape.plants)
	for i, id := range seeded {
		mayExist[id] = true
		if i%5 == 0 {
			deletable = append(deletable, id)
		} else {
			stable = append(stable, id)
		}
	}
	rng.Shuffle(len(deletable), func(i, j int) { deletable[i], deletable[j] = deletable[j], deletable[i] })

	// Creator k makes ids ending in k+1 between the seeded ones, in random
	// order, alternating with ids below (k=0) or above (k=1) the seeded range.
	const budget = 1500
	creates := [2][]int64{}
	for k := range creates {
		for i := range budget {
			id := seeded[rng.IntN(len(seeded))] + int64(k) + 1
			if i%2 == 1 {
				id = seeded[0] - 10*int64(i) - 1
				if k == 1 {
					id = seeded[len(seeded)-1] + 10*int64(i) + 1
				}
			}
			if !mayExist[id] {
				creates[k] = append(creates[k], id)
				mayExist[id] = true
			}
		}
	}

	const batch = 30 // writes per page
	tickets := make(chan struct{}, batch)
	var pending sync.WaitGroup // writes of the current batch
	type writer struct {
		ops  []int64 // ids to create or delete, in order
		op   func(ctx context.Context, id int64) error
		done []int64
		err  error
	}
	create := func(ctx context.Context, id int64) error {
		return s.send(ctx, http.MethodPost, "/plants", walkBody(id), http.StatusOK)
	}
	writers := []*writer{
		{ops: creates[0], op: create},
		{ops: creates[1], op: create},
		{ops: deletable, op: func(ctx context.Context, id int64) error {
			return s.send(ctx, http.MethodDelete, "/plants/"+strconv.FormatInt(id, 10), "", http.StatusNoContent)
		}},
	}
	var running sync.WaitGroup
	for _, w := range writers {
		running.Go(func() {
			for range tickets {
				if w.err == nil && len(w.done) < len(w.ops) {
					id := w.ops[len(w.done)]
					if w.err = w.op(t.Context(), id); w.err == nil {
						w.done = append(w.done, id)
					}
				}
				pending.Done()
			}
		})
	}
	stopWriters := sync.OnceFunc(func() { close(tickets); running.Wait() })
	defer stopWriters() // also when the walk fails the test

	pages := 0
	seen := walk(t, s, shape, nil, func(*int64) func() {
		pages++
		pending.Add(batch)
		for range batch {
			tickets <- struct{}{}
		}
		return pending.Wait
	})
	stopWriters()
	for _, w := range writers {
		if w.err != nil {
			t.Fatalf("a concurrent client failed: %v", w.err)
		}
	}
	created, deleted := len(writers[0].done)+len(writers[1].done), len(writers[2].done)
	t.Logf("walked %d pages, %d plants, while %d plants were created and %d deleted", pages, len(seen), created, deleted)
	if created == 0 || deleted == 0 {
		t.Fatalf("the writers created %d and deleted %d plants: the walk was not concurrent", created, deleted)
	}
	assertWalk(t, seen, stable, mayExist)

	// At rest, a walk sees exactly what the clients left.
	final := make(map[int64]bool, len(mayExist))
	for _, id := range seeded {
		final[id] = true
	}
	for _, w := range writers[:2] {
		for _, id := range w.done {
			final[id] = true
		}
	}
	for _, id := range writers[2].done {
		delete(final, id)
	}
	assertSameIDs(t, "walk at rest", walk(t, s, shape, nil, nil), sortedKeys(final))
}
