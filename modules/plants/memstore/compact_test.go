package memstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A random run of creates and deletes, checked against a map after every
// compaction and at the end: compaction moves every live text and loses none.
func TestCompactionKeepsEveryPlant(t *testing.T) {
	ctx := context.Background()
	s := New()
	model := map[int64]plant.Plant{}
	rng := rand.New(rand.NewPCG(1, 2))
	compactions := 0
	for i := range 60_000 {
		id := rng.Int64N(4_000)
		if _, ok := model[id]; ok && rng.IntN(2) == 0 {
			blocks := len(s.texts.blocks)
			if err := s.Delete(ctx, id); err != nil {
				t.Fatalf("delete %d: %v", id, err)
			}
			delete(model, id)
			if len(s.texts.blocks) < blocks {
				compactions++
				checkAgainst(t, s, model)
			}
			continue
		}
		p := plant.Plant{ID: id, Name: strings.Repeat("n", rng.IntN(300)) + strconv.Itoa(i)}
		if rng.IntN(3) > 0 {
			p.Tag = plant.StringPtr(strings.Repeat("t", rng.IntN(40)))
		}
		if _, ok := model[id]; ok {
			p = model[id] // an identical create, so that it succeeds
		}
		if _, err := s.Create(ctx, p); err != nil {
			t.Fatalf("create %d: %v", id, err)
		}
		model[id] = p
	}
	if compactions == 0 {
		t.Fatal("the run never compacted; make it delete more")
	}
	checkAgainst(t, s, model)
	if waste := s.texts.total - s.texts.live; waste > s.texts.live+2*blockSize {
		t.Errorf("%d bytes of deleted text kept for %d live", waste, s.texts.live)
	}
}

func checkAgainst(t *testing.T, s *Store, model map[int64]plant.Plant) {
	t.Helper()
	all, err := s.List(context.Background(), plant.ListQuery{Limit: len(model) + 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(model) {
		t.Fatalf("store lists %d plants, model has %d", len(all), len(model))
	}
	for _, got := range all {
		if want := model[got.ID]; !got.Equal(want) {
			t.Fatalf("plant %d is %+v, want %+v", got.ID, got, want)
		}
	}
}
