package memstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The log's chunks: records are read and pruned across chunk boundaries,
// a prune that empties the log leaves Head at the newest version, and the
// log grows again after it. Record i is dated i ns, so that a prune
// before i keeps versions i+1 on.
func TestChangeLogAcrossChunks(t *testing.T) {
	ctx := context.Background()
	s := New()
	const n = 3*chunkLen + 5
	for id := range int64(n) {
		if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "p", Tag: plant.StringPtr("t")}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range s.log.len() {
		s.log.at(i).at = int64(i)
	}
	check := func(after int64, want int) {
		t.Helper()
		recs, err := s.Changes(ctx, changes.Cursor{History: s.log.history, Version: after}, n)
		if err != nil || len(recs) != want {
			t.Fatalf("after v%d: %d records, %v; want %d", after, len(recs), err, want)
		}
		for i, r := range recs {
			if v := after + 1 + int64(i); r.Version != v || r.Plant.ID != v-1 || r.Plant.Name != "p" || *r.Plant.Tag != "t" {
				t.Fatalf("after v%d, record %d: %+v, want version %d", after, i, r, v)
			}
		}
	}
	check(0, n)
	for _, cut := range []int{1, chunkLen - 1, chunkLen, chunkLen + 1, 3 * chunkLen} {
		if _, err := s.PruneChanges(ctx, time.Unix(0, int64(cut))); err != nil {
			t.Fatal(err)
		}
		if got := s.log.len(); got != n-cut {
			t.Fatalf("pruned before %d: %d kept, want %d", cut, got, n-cut)
		}
		check(int64(cut), n-cut)
		if _, err := s.Changes(ctx, changes.Cursor{History: s.log.history, Version: int64(cut) - 1}, 1); !errors.Is(err, changes.ErrCursorGone) {
			t.Fatalf("pruned before %d: after v%d = %v, want gone", cut, cut-1, err)
		}
	}
	if pruned, _ := s.PruneChanges(ctx, time.Unix(0, n)); pruned != 5 || s.log.len() != 0 || len(s.log.chunks) != 0 {
		t.Fatalf("pruned %d, %d kept in %d chunks; want the last 5 pruned, no chunk left", pruned, s.log.len(), len(s.log.chunks))
	}
	if h, _ := s.Head(ctx); h.Version != n {
		t.Fatalf("Head of the emptied log = %+v, want version %d", h, n)
	}
	if err := s.Delete(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Changes(ctx, changes.Cursor{History: s.log.history, Version: n}, 10); err != nil || len(recs) != 1 || recs[0].Kind != changes.Deleted || recs[0].Version != n+1 {
		t.Fatalf("after the emptied log: %+v, %v; want the delete, version %d", recs, err, n+1)
	}
}
