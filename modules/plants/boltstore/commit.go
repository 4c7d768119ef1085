package boltstore

import (
	"context"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/internal/batching"
	"github.com/plantstore/plantstore/internal/storekit"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Group commit. A bbolt commit costs two fdatasyncs whatever it holds, so
// the store runs every write through one goroutine that commits, in one
// transaction, all the writes that queued up while the previous commit was
// syncing, and each caller returns only after its own write is on disk.
// A lone write commits at once; under load the batches grow by themselves,
// so throughput grows with concurrency. The one wait there is, a short one
// for writers expected back (see waitForWriters), adapts to the load,
// unlike the fixed MaxBatchDelay of bbolt's DB.Batch.
//
// Each write also reports its own outcome: a conflict or a missing plant is
// an answer to that caller, not a failure of the transaction, so the other
// writes in the batch commit regardless (DB.Batch would instead roll the
// whole batch back and re-run the failing function alone).

// maxBatch bounds one transaction. Beyond a few hundred writes a batch no
// longer saves fsyncs worth having, and a bound keeps a commit's dirty pages
// and its callers' wait modest.
const maxBatch = 1024

// maxFillWait caps waitForWriters on a disk whose commits are slow.
const maxFillWait = 5 * time.Millisecond

// A write changes the store inside a transaction and returns its caller's
// outcome: a create's result (other writes return 0) and nil, or an answer
// (plant.IsAnswer: a conflict, a missing plant), after which the write must
// have left the transaction untouched. Answers are the callers' business,
// not the batch's: the other writes commit regardless. Any other error is
// a failure: the transaction is rolled back and the batch re-run without
// that write, whose caller gets the error. So a write must be a pure
// function of the transaction's state, safe to run again.
type write func(tx *bolt.Tx) (plant.CreateResult, error)

// outcome is what a write's caller is told.
type outcome = batching.Outcome[plant.CreateResult]

type pending struct {
	apply write
	done  chan outcome // buffered: the committer never blocks on a caller
}

type committer struct {
	db      *bolt.DB
	queue   *batching.Queue[*pending]
	stopped chan struct{}
	started atomic.Bool // run was spawned, or close ran first: see start (lifecycle.go)

	lastCommit time.Duration // owned by run
	durable    atomic.Int64  // id of the last transaction known to be on disk

	commits         atomic.Int64 // transactions committed: see Stats
	writesCommitted atomic.Int64 // writes those transactions carried

	// changed says whether the transaction being applied logged a change
	// (set by Store.logChange); owned by run.
	changed bool
	// durableChange wakes the change log's followers once a commit that
	// logged a change is on disk (ChangeLog.Wait).
	durableChange storekit.Waker
}

// Stats is what the store tells of its group commit. The ratio of the
// counters' increases over an interval, WritesCommitted / Commits, is the
// group commit's batch size: how many writes shared each commit's two
// fdatasyncs. It is 1 for writers one at a time and grows with
// concurrency; a disk whose flush is slow makes it grow too, as more
// writes queue during each commit.
type Stats struct {
	// Commits counts the transactions the group commit made durable.
	Commits int64
	// WritesCommitted counts the writes those transactions carried:
	// creates, replaces and deletes, the webhooks' outbox writes and the
	// pruner's (every Update), an answered one (a conflict, a precondition
	// that failed) included. A write that failed, which its transaction
	// was re-run without, is not; nor is a create of a plant already on
	// disk, answered from a read without a commit.
	WritesCommitted int64
}

// Stats returns the store's group commit figures, counted since Open.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.writes.commits.Load(), WritesCommitted: s.writes.writesCommitted.Load()}
}

// newCommitter builds the committer of db, whose committed transactions up
// to durableTx are on disk. Its goroutine starts with start.
func newCommitter(db *bolt.DB, durableTx int) *committer {
	c := &committer{db: db, queue: batching.NewQueue[*pending](maxBatch), stopped: make(chan struct{})}
	c.durable.Store(int64(durableTx))
	return c
}

// onDisk reports whether the state a read transaction sees is on disk. A
// reader can see a commit whose final fdatasync has not returned yet (bbolt
// writes the meta page, then syncs it); such a state is not durable yet.
func (c *committer) onDisk(tx *bolt.Tx) bool { return int64(tx.ID()) <= c.durable.Load() }

// do runs w in a shared transaction and returns its outcome once the
// transaction is durable. When ctx ends first, do returns ctx.Err() and the
// write may or may not be committed; an identical retry settles it.
func (c *committer) do(ctx context.Context, w write) (plant.CreateResult, error) {
	if !c.started.Load() {
		return 0, ErrNotStarted
	}
	p := &pending{apply: w, done: make(chan outcome, 1)}
	if err := c.queue.Send(ctx, p); err != nil {
		return 0, err
	}
	return batching.Await(ctx, p.done)
}

// close commits the writes already queued, then stops the committer.
func (c *committer) close() {
	if c.started.CompareAndSwap(false, true) { // never started: nothing to wait for
		close(c.stopped)
	}
	c.queue.Close()
	<-c.stopped
}

func (c *committer) run() {
	defer close(c.stopped)
	batch := make([]*pending, 0, maxBatch)
	outcomes := make([]outcome, 0, maxBatch)
	fill := time.NewTimer(time.Hour)
	fill.Stop()
	expect := 0 // writers the next batch should hold; see waitForWriters
	for first := range c.queue.Receive() {
		batch = append(batch[:0], first)
		batch = c.drain(batch)
		batch = c.waitForWriters(batch, expect, fill)
		start := time.Now()
		c.commit(batch, outcomes)
		c.lastCommit = time.Since(start)
		// The writers just answered will likely write again; those
		// queued meanwhile are waiting already.
		expect = len(batch) + c.queue.Len()
		clear(batch) // let the answered writes' plants be collected
	}
}

// drain adds what is queued, without waiting.
func (c *committer) drain(batch []*pending) []*pending {
	for len(batch) < maxBatch {
		select {
		case p, ok := <-c.queue.Receive():
			if !ok {
				return batch
			}
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// waitForWriters lets a batch fill up to the expected number of writers,
// waiting at most as long as the last commit took (and maxFillWait).
// Without it, a steady set of writers splits into two halves that take
// turns: one half's commit runs while the other half queues, so every
// commit carries half of them. Waiting for the returning half doubles the
// batch for less than a commit's time. A lone writer expects one write, so
// it never waits; a writer that went away costs one wait, after which it
// is no longer expected.
func (c *committer) waitForWriters(batch []*pending, expect int, fill *time.Timer) []*pending {
	if len(batch) >= min(expect, maxBatch) {
		return batch
	}
	fill.Reset(min(c.lastCommit, maxFillWait))
	defer fill.Stop()
	for len(batch) < min(expect, maxBatch) {
		select {
		case p, ok := <-c.queue.Receive():
			if !ok {
				return batch
			}
			batch = append(batch, p)
		case <-fill.C:
			return batch
		}
	}
	return batch
}

// commit applies batch in one transaction and answers every caller.
func (c *committer) commit(batch []*pending, outcomes []outcome) {
	for len(batch) > 0 {
		outcomes = outcomes[:len(batch)]
		failed := -1
		var txID int
		err := c.db.Update(func(tx *bolt.Tx) error {
			txID = tx.ID()
			c.changed = false
			for i, p := range batch {
				result, err := p.apply(tx)
				if err != nil && !plant.IsAnswer(err) {
					failed = i
					return err
				}
				outcomes[i] = outcome{Value: result, Err: err}
			}
			return nil
		})
		if failed >= 0 {
			// Rolled back: answer the failed write and re-run the others
			// in their order, which matters when two touch the same id.
			batch[failed].done <- outcome{Err: err}
			batch = append(batch[:failed], batch[failed+1:]...)
			continue
		}
		if err == nil {
			c.durable.Store(int64(txID))
			c.commits.Add(1)
			c.writesCommitted.Add(int64(len(batch)))
			if c.changed {
				c.durableChange.Wake()
			}
		}
		for i, p := range batch {
			if err != nil {
				p.done <- outcome{Err: err} // the commit failed; a retry settles each write's fate
			} else {
				p.done <- outcomes[i]
			}
		}
		return
	}
}

// Update runs fn in a write transaction of the group commit, shared with
// the creates and deletes queued with it, and returns once it is on disk.
// Like every write, fn must depend on the transaction's state only: it may
// run again when another write of its batch fails.
func (s *Store) Update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	_, err := s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) { return 0, fn(tx) })
	return err
}

// viewDurable runs fn in a read transaction with durableTx, the id of the
// last transaction known to be on disk: what a later one wrote (the
// transaction fn sees may be one) could still be undone by a crash. What
// is read to be acted on outside the file (the outbox's claims, the change
// log's records) carries the id of the transaction that wrote it (tx.ID())
// and is read only once written at or below durableTx. It never waits: under a
// steady stream of writes the newest commit is nearly always still
// syncing (bbolt lets readers see a commit before its final fdatasync
// returns), but what came before it is on disk.
func (s *Store) viewDurable(fn func(tx *bolt.Tx, durableTx int) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(tx, int(s.writes.durable.Load())) })
}
