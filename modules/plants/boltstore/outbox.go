package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The webhook outbox's buckets, made by migration 2: the pending
// deliveries, filed in the transaction that makes the change they
// announce, and the dead letters; and by migration 3, the delivered
// events, kept for a replay until they are pruned. Outbox
// (outboxstore.go) alone reads and writes them.
var (
	OutboxBucket     = []byte("webhook_outbox")
	DeadLetterBucket = []byte("webhook_dead_letters")
	DeliveredBucket  = []byte("webhook_delivered")
)

// Update runs fn in a write transaction of the group commit, shared with
// the creates and deletes queued with it, and returns once it is on disk.
// Like every write, fn must depend on the transaction's state only: it may
// run again when another write of its batch fails.
func (s *Store) Update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	_, err := s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) { return 0, fn(tx) })
	return err
}

// ViewDurable runs fn in a read transaction with durableTx, the id of the
// last transaction known to be on disk: what a later one wrote (the
// transaction fn sees may be one) could still be undone by a crash. A
// reader that acts outside the file, as a webhook sender does, records the
// writing transaction's id (tx.ID() in Update) beside its data and acts
// only on data written at or below durableTx. It never waits: under a
// steady stream of writes the newest commit is nearly always still
// syncing (bbolt lets readers see a commit before its final fdatasync
// returns), but what came before it is on disk.
func (s *Store) ViewDurable(fn func(tx *bolt.Tx, durableTx int) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(tx, int(s.writes.durable.Load())) })
}
