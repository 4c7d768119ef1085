package storetest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// runBatch runs the cases of a store that creates in batches
// (plant.BatchCreator): the bulk import's path.
func runBatch(t *testing.T, open func(t *testing.T) Store) {
	t.Run("Results", func(t *testing.T) {
		t.Parallel()
		testBatchResults(t, open(t))
	})
	t.Run("OneChangeAndEventPerCreate", func(t *testing.T) {
		t.Parallel()
		testBatchOneChangeAndEventPerCreate(t, open)
	})
}

func batchCreator(t *testing.T, s plant.Store) plant.BatchCreator {
	t.Helper()
	bc, ok := s.(plant.BatchCreator)
	if !ok {
		t.Fatalf("%T creates no batches", s)
	}
	return bc
}

// testBatchResults: one batch of new plants, identical ones and
// conflicting ones answers each as its own Create would, with the stored
// plant on a conflict, and stores the new ones only.
func testBatchResults(t *testing.T, st Store) {
	s := st.Plants
	stored := []plant.Plant{
		{ID: 5, Name: "five", Tag: plant.StringPtr("t")},
		{ID: 9, Name: "nine"},
		{ID: -7, Name: "minus seven", Tag: plant.StringPtr("")},
	}
	for _, p := range stored {
		mustCreate(t, s, p)
	}
	batch := []plant.Plant{
		{ID: 12, Name: "twelve", Tag: plant.StringPtr("t")},
		{ID: 5, Name: "five", Tag: plant.StringPtr("t")},   // identical
		{ID: 9, Name: "nine", Tag: plant.StringPtr("tag")}, // conflict: a tag added
		{ID: -3, Name: ""},
		{ID: -7, Name: "minus seven"}, // conflict: the empty tag is a tag
		{ID: 1, Name: "one", Tag: plant.StringPtr("")},
	}
	want := []plant.BatchResult{
		{Result: plant.Created},
		{Result: plant.Unchanged},
		{Err: plant.ErrConflict, Stored: stored[1]},
		{Result: plant.Created},
		{Err: plant.ErrConflict, Stored: stored[2]},
		{Result: plant.Created},
	}
	got, err := batchCreator(t, s).CreateBatch(ctx, batch)
	if err != nil {
		t.Fatalf("CreateBatch = %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("CreateBatch gave %d results for %d plants", len(got), len(batch))
	}
	for i, w := range want {
		g := got[i]
		if g.Result != w.Result || !errors.Is(g.Err, w.Err) || (w.Err == nil) != (g.Err == nil) || !g.Stored.Equal(w.Stored) {
			t.Errorf("plant %d: %v %v %s, want %v %v %s", batch[i].ID, g.Result, g.Err, show(g.Stored), w.Result, w.Err, show(w.Stored))
		}
	}
	for _, p := range []plant.Plant{batch[0], stored[0], stored[1], batch[3], stored[2], batch[5]} {
		assertGet(t, s, p)
	}

	// The same batch again: every plant is there.
	again, err := batchCreator(t, s).CreateBatch(ctx, batch)
	if err != nil {
		t.Fatalf("CreateBatch again = %v", err)
	}
	for i, g := range again {
		w := want[i]
		if w.Result == plant.Created {
			w.Result = plant.Unchanged
		}
		if g.Result != w.Result || (w.Err == nil) != (g.Err == nil) || !g.Stored.Equal(w.Stored) {
			t.Errorf("again, plant %d: %v %v %s, want %v %v %s", batch[i].ID, g.Result, g.Err, show(g.Stored), w.Result, w.Err, show(w.Stored))
		}
	}
}

// batchEndpoint is the endpoint the batch cases' plan writes an event for.
const batchEndpoint = "batch"

// testBatchOneChangeAndEventPerCreate: a batch logs exactly one change,
// and writes exactly one event per endpoint, for each plant it creates,
// and none for those it finds stored, identical or not.
func testBatchOneChangeAndEventPerCreate(t *testing.T, open func(t *testing.T) Store) {
	st := open(t)
	if st.Outbox != nil {
		st.Outbox.OnChange(time.Hour, outbox.PlanFunc(func(cs []changes.Change, _ bool) ([]outbox.Row, func(map[int64]changes.Committed, error)) {
			rows := make([]outbox.Row, 0, len(cs))
			for _, c := range cs {
				rows = append(rows, outbox.Row{ID: outbox.NewID(), Plant: c.Plant(), Kind: c.Kind, Endpoint: batchEndpoint,
					Event: outbox.Event{Body: []byte(strconv.FormatInt(c.Plant(), 10))}})
			}
			return rows, nil
		}))
	}
	s := st.Plants
	const n = 3000
	// Plants 0 to 99 are there before, the odd ones with another name.
	for id := range int64(100) {
		mustCreate(t, s, plant.Plant{ID: id, Name: "plant " + itoa(id%2*1000+id)})
	}
	batch := make([]plant.Plant, 0, n)
	for id := range int64(n) {
		batch = append(batch, plant.Plant{ID: id, Name: "plant " + itoa(id)})
	}
	results, err := batchCreator(t, s).CreateBatch(ctx, batch)
	if err != nil {
		t.Fatalf("CreateBatch = %v", err)
	}
	for i, r := range results {
		id := batch[i].ID
		switch {
		case id >= 100 && (r.Result != plant.Created || r.Err != nil),
			id < 100 && id%2 == 0 && (r.Result != plant.Unchanged || r.Err != nil),
			id < 100 && id%2 == 1 && !errors.Is(r.Err, plant.ErrConflict):
			t.Fatalf("plant %d: %v %v", id, r.Result, r.Err)
		}
	}

	if st.Changes != nil {
		created := map[int64]int{}
		var after changes.Cursor
		for {
			recs, err := st.Changes.Changes(ctx, after, 1000)
			if err != nil {
				t.Fatalf("Changes = %v", err)
			}
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				if r.Kind != changes.Created {
					t.Fatalf("change %+v, want creates only", r)
				}
				created[r.Plant.ID]++
			}
			after = recs[len(recs)-1].Cursor
		}
		if len(created) != n {
			t.Errorf("the change log holds creates of %d plants, want %d", len(created), n)
		}
		for id, c := range created {
			if c != 1 {
				t.Errorf("plant %d: %d changes, want 1", id, c)
			}
		}
	}

	if st.Outbox != nil {
		events := map[int64]int{}
		for {
			ds, err := st.Outbox.Claim(context.Background(), batchEndpoint, 1000, time.Hour)
			if err != nil {
				t.Fatalf("Claim = %v", err)
			}
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				id, err := strconv.ParseInt(string(d.Body), 10, 64)
				if err != nil || d.Kind != changes.Created {
					t.Fatalf("delivery %+v, want a create's event", d)
				}
				events[id]++
			}
		}
		// The 100 plants there before were created with the plan set: one
		// event each, from their Create.
		if len(events) != n {
			t.Errorf("events for %d plants, want %d", len(events), n)
		}
		for id, c := range events {
			if c != 1 {
				t.Errorf("plant %d: %d events, want 1", id, c)
			}
		}
	}
}
