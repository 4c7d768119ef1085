package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A change is read once its transaction is on disk, and not before: a
// record written by a transaction past the last synced one (its tx set
// ahead here, as a commit still syncing would leave it) is neither in
// Changes nor the Head.
func TestChangesReadOnlyWhatIsOnDisk(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "on disk"}); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, func(tx *bolt.Tx) error {
		if _, err := s.logChange(tx, changes.Created, func() []byte { k := plantKey(2); return k[:] }(), []byte{valueNoTag, 0}); err != nil {
			return err
		}
		b := tx.Bucket(changesBucket)
		k, v := b.Cursor().Last()
		ahead := append([]byte(nil), v...)
		binary.BigEndian.PutUint64(ahead, uint64(tx.ID()+1<<30)) //nolint:gosec // a test's transaction id
		return b.Put(append([]byte(nil), k...), ahead)
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.Changes().Changes(ctx, changes.Cursor{}, 10)
	if err != nil || len(recs) != 1 || recs[0].Plant.Name != "on disk" {
		t.Fatalf("Changes = %+v, %v; want only the record on disk", recs, err)
	}
	if h, err := s.Changes().Head(ctx); err != nil || h != recs[0].Cursor {
		t.Fatalf("Head = %+v, %v; want %+v, the newest on disk", h, err, recs[0].Cursor)
	}
}

// Bolt reads the plant it replaces or deletes in the change's transaction:
// the plan is told the whole plant as it was, not its id alone.
func TestThePlanIsToldThePlantBefore(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	var asked []changes.Change
	s.Outbox().OnChange(time.Hour, outbox.PlanFunc(func(changes []changes.Change, _ bool) ([]outbox.Row, func(map[int64]changes.Committed, error)) {
		asked = append(asked, changes...)
		return nil, nil
	}))
	rex := plant.Plant{ID: 1, Name: "Rex", Tag: plant.StringPtr("dog")}
	renamed := plant.Plant{ID: 1, Name: "Max"}
	if _, err := s.Create(ctx, rex); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(ctx, renamed, &rex); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 3 || !asked[1].Before.Equal(rex) || !asked[1].After.Equal(renamed) || !asked[2].Before.Equal(renamed) || !asked[2].After.Equal(plant.Plant{}) {
		t.Fatalf("the plan was asked for %+v; want the replace from Rex to Max, the delete of Max", asked)
	}
}

// With a retention, Start spawns the pruner, which removes the changes
// and the delivered events committed before the retention window every
// tenth of it, and Close stops it. Pending events stay.
func TestRetentionPrunesChangesAndDeliveredEvents(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, err := OpenConfig(Config{DataDir: dir, ChangesRetention: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		box := s.Outbox()
		box.OnChange(time.Hour, outbox.PlanFunc(func(changes []changes.Change, _ bool) ([]outbox.Row, func(map[int64]changes.Committed, error)) {
			var rows []outbox.Row
			for _, c := range changes {
				rows = append(rows, outbox.Row{ID: outbox.NewID(), Plant: c.Plant(), Kind: c.Kind, Endpoint: "a", Event: outbox.Event{Body: []byte(c.After.Name)}})
			}
			return rows, nil
		}))
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "old"}); err != nil {
			t.Fatal(err)
		}
		ds, err := box.Claim(ctx, "a", 10, time.Hour)
		if err != nil || len(ds) != 1 {
			t.Fatalf("Claim = %v, %v", ds, err)
		}
		if err := box.Delivered(ctx, ds); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // the ticks at 6, 12, ... 60 minutes: not older than an hour yet
		synctest.Wait()
		recs, err := s.Changes().Changes(ctx, changes.Cursor{}, 10)
		if err != nil || len(recs) != 1 {
			t.Fatalf("after an hour: %d records, %v; want the change kept", len(recs), err)
		}
		first := recs[0].Cursor
		if _, err := s.Create(ctx, plant.Plant{ID: 2, Name: "new"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Minute) // the tick at 66 minutes
		synctest.Wait()
		if _, err := s.Changes().Changes(ctx, changes.Cursor{}, 10); !errors.Is(err, changes.ErrCursorGone) {
			t.Fatalf("Changes from zero after the prune = %v, want ErrCursorGone", err)
		}
		if recs, err := s.Changes().Changes(ctx, first, 10); err != nil || len(recs) != 1 || recs[0].Plant.Name != "new" {
			t.Fatalf("after the pruned change: %+v, %v; want the new create", recs, err)
		}
		if n, err := box.Replay(ctx, "a", time.Time{}, 10); err != nil || n != 0 {
			t.Fatalf("Replay after the prune = %d, %v; want the delivered event pruned", n, err)
		}
		if stats, err := box.Stats(ctx); err != nil || stats["a"].Pending != 1 {
			t.Fatalf("stats = %+v, %v; want the new create's event pending", stats, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A zero retention (--changes-retention=0) keeps every change and every
// delivered event: Start spawns no pruner, and a thousand days later the
// change is still in the log and its delivered event can be replayed.
func TestZeroRetentionKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, err := OpenConfig(Config{DataDir: dir, ChangesRetention: 0})
		if err != nil {
			t.Fatal(err)
		}
		box := s.Outbox()
		box.OnChange(time.Hour, outbox.PlanFunc(func(changes []changes.Change, _ bool) ([]outbox.Row, func(map[int64]changes.Committed, error)) {
			var rows []outbox.Row
			for _, c := range changes {
				rows = append(rows, outbox.Row{ID: outbox.NewID(), Plant: c.Plant(), Kind: c.Kind, Endpoint: "a", Event: outbox.Event{Body: []byte(c.After.Name)}})
			}
			return rows, nil
		}))
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "old"}); err != nil {
			t.Fatal(err)
		}
		ds, err := box.Claim(ctx, "a", 10, time.Hour)
		if err != nil || len(ds) != 1 {
			t.Fatalf("Claim = %v, %v", ds, err)
		}
		if err := box.Delivered(ctx, ds); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1000 * 24 * time.Hour)
		synctest.Wait()
		if recs, err := s.Changes().Changes(ctx, changes.Cursor{}, 10); err != nil || len(recs) != 1 || recs[0].Plant.Name != "old" {
			t.Fatalf("after a thousand days: %+v, %v; want the change kept", recs, err)
		}
		if n, err := box.Replay(ctx, "a", time.Time{}, 10); err != nil || n != 1 {
			t.Fatalf("Replay after a thousand days = %d, %v; want the delivered event kept", n, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A delivery filed before kinds and versions were (by migration 2's
// build) is claimed as a create of version 0.
func TestAnOlderDeliveryIsACreateOfNoVersion(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	now := time.Now()
	err := s.Update(ctx, func(tx *bolt.Tx) error {
		v, err := pendingValue(boltRecord{ID: "msg_old", Endpoint: "a", Body: []byte(`{"id":1,"name":"old"}`), Created: now.UnixNano()})
		if err != nil {
			return err
		}
		return tx.Bucket(outboxBucket).Put(pendingKey("a", now, "msg_old"), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.Outbox().Claim(ctx, "a", 10, time.Hour)
	if err != nil || len(ds) != 1 || ds[0].ID != "msg_old" || ds[0].Kind != changes.Created || ds[0].Version != 0 {
		t.Fatalf("Claim = %+v, %v; want msg_old, a create of version 0", ds, err)
	}
}

// The log, its sequence and its history id are in the file: a store
// opened again reads the changes made before and keeps its history, and
// its versions go on from the clock (in microseconds) at each open, past
// every version given before, so that a copy of the file restored from a
// backup never gives again a version the lost changes had.
func TestChangeLogOutlivesTheProcess(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		start := time.Now().UnixMicro()
		var histories []uint64
		for run, ids := range [][]int64{{1, 2}, {3}} {
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			MustStart(t, s)
			histories = append(histories, s.History())
			for _, id := range ids {
				if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "p"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if run == 0 {
				time.Sleep(time.Second)
			}
		}
		s := openIn(t, dir)
		recs, err := s.Changes().Changes(ctx, changes.Cursor{}, 10)
		var versions []int64
		for _, r := range recs {
			versions = append(versions, r.Version)
		}
		if want := []int64{start, start + 1, start + 1_000_000}; err != nil || !slices.Equal(versions, want) {
			t.Fatalf("Changes after two runs = %v, %v; want versions %v", versions, err, want)
		}
		if h := s.History(); h == 0 || histories[0] != h || histories[1] != h || recs[2].Cursor.History != h {
			t.Fatalf("histories %v, then %d, cursor of %d: want one id, kept", histories, h, recs[2].Cursor.History)
		}
	})
}

func openIn(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
