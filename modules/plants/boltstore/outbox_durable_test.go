package boltstore

import (
	"context"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A delivery is claimed once the transaction that filed it is on disk,
// and not before: one filed by a transaction past the last synced one (its
// Tx set ahead here, as a commit still syncing would leave it) waits. The
// claims run while a stream of creates keeps commits going, as under load,
// when the newest commit is often still syncing: what is on disk is
// claimed all the same.
func TestBoltClaimsOnlyWhatIsOnDisk(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	MustStart(t, s)
	defer s.Close()
	box := s.Outbox()

	stop := make(chan struct{})
	var stream sync.WaitGroup
	for w := range 8 {
		stream.Go(func() {
			for i := int64(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Create(ctx, plant.Plant{ID: int64(w)<<32 | i, Name: "stream"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); stream.Wait() }()

	var notYet []byte // the last round's stand-in for a commit still syncing
	for round := range 20 {
		err := s.Update(ctx, func(tx *bolt.Tx) error {
			// A commit still syncing is always the newest, so its
			// deliveries are the last due: the stand-in of the round
			// before has synced (here: gone) by the time this one files.
			if notYet != nil {
				if err := tx.Bucket(outboxBucket).Delete(notYet); err != nil {
					return err
				}
			}
			onDisk := outbox.Row{ID: outbox.NewID(), Endpoint: "a", Event: outbox.Event{Body: []byte(`{"id":1,"name":"on disk"}`)}}
			if err := box.write(tx, []outbox.Row{onDisk}, changes.Committed{At: time.Now()}); err != nil {
				return err
			}
			now := time.Now()
			r := boltRecord{ID: outbox.NewID(), Endpoint: "a", Body: []byte(`{"id":2,"name":"not yet"}`), Created: now.UnixNano(), Tx: tx.ID() + 1<<30}
			v, err := pendingValue(r)
			if err != nil {
				return err
			}
			notYet = pendingKey("a", now, r.ID)
			return tx.Bucket(outboxBucket).Put(notYet, v)
		})
		if err != nil {
			t.Fatal(err)
		}
		// Update returned: its transaction is on disk.
		got, err := box.Claim(ctx, "a", 10, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || string(got[0].Body) != `{"id":1,"name":"on disk"}` {
			t.Fatalf("round %d: claimed %d deliveries %v, want only the one on disk", round, len(got), got)
		}
	}
}
