package memstore_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/plants/storetest"
)

// The memory store keeps a change log; it has no outbox, and nothing
// survives its close.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Subject{
		Supports: storetest.Supports{ChangeLog: true},
		Open: func(t *testing.T) storetest.Store {
			s := memstore.New()
			t.Cleanup(func() { _ = s.Close() })
			return storetest.Store{Plants: s, Changes: s}
		},
	})
}

// The goroutine Start spawns prunes the change log every tenth of the
// retention: a change is kept for the retention, and gone within a tenth
// of it more. Close stops the goroutine (the bubble would not end with it
// running).
func TestChangesArePrunedPastTheRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := memstore.NewWithOptions(memstore.Options{ChangesRetention: time.Hour})
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "old"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // the ticks at 6, 12, ... 60 minutes: the change is not older than an hour yet
		synctest.Wait()
		if recs, err := s.Changes(ctx, changes.Cursor{}, 10); err != nil || len(recs) != 1 {
			t.Fatalf("after an hour: %d records, %v; want the change kept", len(recs), err)
		}
		if _, err := s.Create(ctx, plant.Plant{ID: 2, Name: "new"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Minute) // the tick at 66 minutes
		synctest.Wait()
		if _, err := s.Changes(ctx, changes.Cursor{}, 10); !errors.Is(err, changes.ErrCursorGone) {
			t.Fatalf("Changes from zero after the prune = %v, want ErrCursorGone", err)
		}
		recs, err := s.Changes(ctx, changes.Cursor{History: s.History(), Version: 1}, 10)
		if err != nil || len(recs) != 1 || recs[0].Plant.Name != "new" {
			t.Fatalf("after the pruned change: %+v, %v; want the new create", recs, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A zero retention (--changes-retention=0) keeps every change: Start
// spawns no pruner, and a change a thousand days old is still there.
func TestZeroRetentionKeepsEveryChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := memstore.NewWithOptions(memstore.Options{ChangesRetention: 0})
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "old"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1000 * 24 * time.Hour)
		synctest.Wait()
		if recs, err := s.Changes(ctx, changes.Cursor{}, 10); err != nil || len(recs) != 1 || recs[0].Plant.Name != "old" {
			t.Fatalf("after a thousand days: %+v, %v; want the change kept", recs, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
