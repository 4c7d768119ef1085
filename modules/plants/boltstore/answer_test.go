package boltstore

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Every answer a store can give (plant.Answers, wrapped or not) is its
// caller's business: the batch holding it commits once, with the other
// writes, and is not rolled back and re-run as it is for a failure. A
// precondition that does not hold (a conditional PUT) is then as cheap as
// a conflict, however many of them a batch holds.
func TestAnswersDoNotRerunTheBatch(t *testing.T) {
	for _, answer := range plant.Answers {
		for _, wrapped := range []error{answer, fmt.Errorf("boltstore: plant 3: %w", answer)} {
			t.Run(wrapped.Error(), func(t *testing.T) {
				s := openInternal(t)
				var runs atomic.Int64
				errs := queueInOrder(t, s,
					func() error { return errOf(s.Create(ctx, plant.Plant{ID: 1, Name: "a"})) },
					func() error {
						return errOf(s.writes.do(ctx, func(*bolt.Tx) (plant.CreateResult, error) {
							runs.Add(1)
							return 0, wrapped
						}))
					},
					func() error { return errOf(s.Create(ctx, plant.Plant{ID: 2, Name: "b"})) },
				)
				if errs[0] != nil || !errors.Is(errs[1], answer) || errs[2] != nil {
					t.Fatalf("outcomes %v, want nil, %v, nil", errs, answer)
				}
				if n := runs.Load(); n != 1 {
					t.Fatalf("the answering write ran %d times, want once", n)
				}
				if c := s.Stats().Commits; c != 2 {
					t.Fatalf("%d commits, want 2: the stalling write's and the batch's", c)
				}
			})
		}
	}
}

// The store's hook writes in the transaction that creates a plant: it runs
// once per created plant, never for an identical re-create or a conflict,
// and what it writes commits with the plant. A hook that fails fails its
// own create, which leaves nothing behind, while the batch's other creates
// commit.
func TestChangeHookWritesInTheCreatingTransaction(t *testing.T) {
	s := openInternal(t)
	hooked := []byte("test_outbox")
	if err := s.db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket(hooked)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	s.hook = hookFunc(func(tx *bolt.Tx, c changes.Change, _ changes.Committed) error {
		p := c.After
		if p.Name == "refused" {
			return boom
		}
		key := plantKey(p.ID)
		return tx.Bucket(hooked).Put(key[:], []byte(p.Name))
	})
	rose := plant.Plant{ID: 1, Name: "rose"}
	type created struct {
		res plant.CreateResult
		err error
	}
	var got [5]created
	queueInOrder(t, s,
		func() error { got[0].res, got[0].err = s.Create(ctx, rose); return nil },
		func() error { got[1].res, got[1].err = s.Create(ctx, rose); return nil },                                // identical, same batch
		func() error { got[2].res, got[2].err = s.Create(ctx, plant.Plant{ID: 1, Name: "tulip"}); return nil },   // conflict
		func() error { got[3].res, got[3].err = s.Create(ctx, plant.Plant{ID: 2, Name: "refused"}); return nil }, // the hook fails
		func() error { got[4].res, got[4].err = s.Create(ctx, plant.Plant{ID: 3, Name: "ivy"}); return nil },     // created
	)
	want := [5]created{{plant.Created, nil}, {plant.Unchanged, nil}, {0, plant.ErrConflict}, {0, boom}, {plant.Created, nil}}
	for i := range want {
		if got[i].res != want[i].res || !errors.Is(got[i].err, want[i].err) || (want[i].err == nil && got[i].err != nil) {
			t.Errorf("create %d = %v, %v; want %v, %v", i, got[i].res, got[i].err, want[i].res, want[i].err)
		}
	}
	if res, err := s.Create(ctx, rose); res != plant.Unchanged || err != nil { // answered from disk
		t.Fatalf("re-create after the commit = %v, %v; want unchanged", res, err)
	}
	entries := map[string]string{}
	if err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(hooked).ForEach(func(k, v []byte) error {
			id, _ := plantID(k)
			entries[fmt.Sprint(id)] = string(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries["1"] != "rose" || entries["3"] != "ivy" {
		t.Fatalf("the hook wrote %v, want 1:rose and 3:ivy only", entries)
	}
	if _, err := s.Get(ctx, 2); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get of the refused plant = %v, want ErrNotFound", err)
	}
}

// hookFunc is a function as the store's changeHook.
type hookFunc func(tx *bolt.Tx, c changes.Change, committed changes.Committed) error

func (f hookFunc) changed(tx *bolt.Tx, c changes.Change, committed changes.Committed) error {
	return f(tx, c, committed)
}
