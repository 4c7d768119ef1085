package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// durablePoll is how often a snapshot waiting for its read's commit to
// reach the disk looks again, when no change's commit wakes it (the
// commit it waits for may hold no change: an outbox's claim, a prune).
const durablePoll = time.Millisecond

// Snapshot implements changes.Snapshotter: the page and the log's newest
// record are read in one read transaction, whose state is one commit's:
// every change writes its plant and its record in the same commit, so the
// page shows exactly the changes up to that record. The commit a reader
// sees may still be syncing (see viewDurable): the page is answered only
// once it is on disk, so it never shows what a crash can take back.
// Versions follow the commits, so the newest record's is past every change
// the page shows and below every change after it.
func (l *ChangeLog) Snapshot(ctx context.Context, q changes.SnapshotQuery) (changes.Snapshot, error) {
	s := l.store
	if err := ctx.Err(); err != nil {
		return changes.Snapshot{}, err
	}
	if q.Limit <= 0 {
		return changes.Snapshot{}, fmt.Errorf("boltstore: snapshot limit %d is not positive", q.Limit)
	}
	snap := changes.Snapshot{Plants: make([]plant.Plant, 0, min(q.Limit, 128))}
	var readTx int
	err := s.db.View(func(tx *bolt.Tx) error {
		readTx = tx.ID()
		pruned, err := prunedVersion(tx)
		if err != nil {
			return err
		}
		snap.Head = changes.Cursor{History: s.history, Version: pruned}
		if k, _ := tx.Bucket(changesBucket).Cursor().Last(); k != nil {
			snap.Head.Version = int64(binary.BigEndian.Uint64(k)) //nolint:gosec // G115: written from a sequence below 2^63
		}
		list := plant.ListQuery{After: q.After, Tag: q.Tag, Limit: q.Limit}
		if q.Tag == nil {
			return listAll(tx, list, &snap.Plants)
		}
		return listTag(tx, list, &snap.Plants)
	})
	if err != nil {
		return changes.Snapshot{}, err
	}
	if err := s.awaitDurable(ctx, readTx); err != nil {
		return changes.Snapshot{}, err
	}
	snap.Version = snap.Head.Version
	return snap, nil
}

// awaitDurable returns once the transaction txID is on disk.
func (s *Store) awaitDurable(ctx context.Context, txID int) error {
	poll := time.NewTicker(durablePoll)
	defer poll.Stop()
	for {
		woken := s.writes.durableChange.Wait()
		if s.writes.durable.Load() >= int64(txID) {
			return nil
		}
		select {
		case <-woken:
		case <-poll.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
