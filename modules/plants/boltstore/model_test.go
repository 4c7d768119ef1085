package boltstore_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestMatchesMemoryModel runs the same random operations on the bolt store
// and on the memory store, which serves as the model: every answer must be
// the same. Ids come from a small set so that creates conflict, deletes
// hit, and tags move between plants; the bolt store is closed and opened
// again now and then, and checked at the end.
func TestMatchesMemoryModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	s := open(t, dir)
	defer func() { checked(t, s) }()
	model := memstore.New()

	idSet := []int64{math.MinInt64, -3, -2, -1, 0, 1, 2, 3, 4, 5, math.MaxInt64}
	tags := []*string{nil, plant.StringPtr(""), plant.StringPtr("x"), plant.StringPtr("xy")}
	id := func() int64 { return idSet[rng.IntN(len(idSet))] }
	tag := func() *string { return tags[rng.IntN(len(tags))] }
	same := func(a, b error) bool {
		return (a == nil && b == nil) ||
			(errors.Is(a, plant.ErrConflict) && errors.Is(b, plant.ErrConflict)) ||
			(errors.Is(a, plant.ErrNotFound) && errors.Is(b, plant.ErrNotFound))
	}

	for step := range 3000 {
		switch op := rng.IntN(20); {
		case op < 8:
			p := plant.Plant{ID: id(), Name: []string{"a", "b"}[rng.IntN(2)], Tag: tag()}
			res, err := s.Create(ctx, p)
			wantRes, wantErr := model.Create(ctx, p)
			if res != wantRes || !same(err, wantErr) {
				t.Fatalf("step %d: Create(%+v) = %v, %v; model %v, %v", step, p, res, err, wantRes, wantErr)
			}
		case op < 11:
			i := id()
			if got, want := s.Delete(ctx, i), model.Delete(ctx, i); !same(got, want) {
				t.Fatalf("step %d: Delete(%d) = %v, model %v", step, i, got, want)
			}
		case op < 13:
			i := id()
			got, err := s.Get(ctx, i)
			want, werr := model.Get(ctx, i)
			if !same(err, werr) || !got.Equal(want) {
				t.Fatalf("step %d: Get(%d) = %+v, %v; model %+v, %v", step, i, got, err, want, werr)
			}
		case op < 19:
			q := plant.ListQuery{Tag: tag(), Limit: 1 + rng.IntN(5)}
			if rng.IntN(2) == 0 {
				after := id() + int64(rng.IntN(3)-1) // also just off a stored id
				q.After = &after
			}
			got, err := s.List(ctx, q)
			want, werr := model.List(ctx, q)
			if err != nil || werr != nil || len(got) != len(want) {
				t.Fatalf("step %d: List(%+v) = %v, %v; model %v, %v", step, q, got, err, want, werr)
			}
			for i := range got {
				if !got[i].Equal(want[i]) {
					t.Fatalf("step %d: List(%+v)[%d] = %+v, model %+v", step, q, i, got[i], want[i])
				}
			}
		default:
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = open(t, dir)
		}
	}
}
