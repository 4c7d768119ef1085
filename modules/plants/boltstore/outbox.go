package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// The webhook outbox's buckets, made by migration 2: the pending
// deliveries, filed in the transaction that makes the change they
// announce, and the dead letters; and by migration 3, the delivered
// events, kept for a replay until they are pruned. Outbox alone reads and
// writes them.
var (
	outboxBucket     = []byte("webhook_outbox")
	deadLetterBucket = []byte("webhook_dead_letters")
	deliveredBucket  = []byte("webhook_delivered")
)

// Outbox is the webhook outbox in the store's file (outbox.Store). A
// pending delivery is filed under its endpoint, its due time and its id, so
// that a claim is a seek to the endpoint and a scan of what is due; a retry
// files it again under its new due time. One process owns the file, so
// leases are kept in memory: a restart finds every pending delivery due,
// which is what a lease that expired with its process would give. It writes
// no row as its writer's claim (the Planner's claims is false).
type Outbox struct {
	store *Store
	plan  outbox.Planner // set by OnChange, before the first write

	mu     sync.Mutex
	leased map[string]time.Time // delivery id: lease end
}

// Outbox returns the store's outbox, whose buckets migration 2 made.
func (s *Store) Outbox() *Outbox { return s.outbox }

func newOutbox(s *Store) *Outbox {
	return &Outbox{store: s, leased: make(map[string]time.Time)}
}

// OnChange implements outbox.Store: the outbox becomes the store's hook,
// and every change the store commits asks plan, in its transaction, for
// the rows to file with it. lease is unused: the plan is asked without
// claims.
func (o *Outbox) OnChange(_ time.Duration, plan outbox.Planner) {
	o.plan = plan
	o.store.hook = o
}

// changed implements changeHook: the plan's rows for c, filed in c's
// transaction.
func (o *Outbox) changed(tx *bolt.Tx, c changes.Change, committed changes.Committed) error {
	rows, _ := o.plan.Plan([]changes.Change{c}, false)
	return o.write(tx, rows, committed)
}

// boltRecord is a pending delivery's or a dead letter's value.
type boltRecord struct {
	ID          string `json:"id"`
	Endpoint    string `json:"endpoint"`
	Body        []byte `json:"body"`
	TraceParent string `json:"traceparent,omitempty"`
	Created     int64  `json:"created"` // Unix nanoseconds
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error,omitempty"`
	Died        int64  `json:"died,omitempty"` // dead letters: Unix nanoseconds
	// Tx is the id of the transaction that filed a pending delivery: it is
	// claimed only once that transaction is on disk (0: filed before this
	// field was, by a process since gone, so on disk).
	Tx int `json:"tx,omitempty"`
	// Kind and Version are the change's (0 for both in a record filed
	// before they were: a create, of no known version).
	Kind    changes.Kind `json:"kind,omitempty"`
	Version int64        `json:"version,omitempty"`
}

// kind is the record's change's kind: a record filed before kinds were
// announces a create, the one change announced then.
func (r boltRecord) kind() changes.Kind {
	if r.Kind == 0 {
		return changes.Created
	}
	return r.Kind
}

// A pending delivery's value is its creation time (8 bytes, big-endian Unix
// nanoseconds) and then its record as JSON, so that Stats reads the age of
// a large backlog without decoding it. A dead letter's value is the JSON
// alone.
func pendingValue(r boltRecord) ([]byte, error) {
	record, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(record)), uint64(r.Created)), record...), nil //nolint:gosec // a creation time after 1970: never negative
}

func decodePending(k, v []byte) (boltRecord, error) {
	var r boltRecord
	if len(v) < 8 {
		return r, fmt.Errorf("outbox: delivery %q: a value of %d bytes", k, len(v))
	}
	if err := json.Unmarshal(v[8:], &r); err != nil {
		return r, fmt.Errorf("outbox: delivery %q: %w", k, err)
	}
	return r, nil
}

// pendingKey files a delivery: endpoint, 0, due time (big-endian Unix
// nanoseconds, so keys sort by it), id. Endpoint names hold no 0 byte. A
// delivered event is filed the same way under its change's commit time.
// A time before 1970 (the zero time of a replay since the beginning)
// files as 1970.
func pendingKey(endpoint string, due time.Time, id string) []byte {
	k := make([]byte, 0, len(endpoint)+1+8+len(id))
	k = append(k, endpoint...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(max(0, unixNano(due)))) //nolint:gosec // G115: not negative
	return append(k, id...)
}

// unixNano is t.UnixNano, defined for every time: clamped to what an
// int64 of nanoseconds holds (1678 to 2262).
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// write files rows, due now, in the transaction that makes the change
// they announce, with the version and time its log record was given.
func (o *Outbox) write(tx *bolt.Tx, rows []outbox.Row, c changes.Committed) error {
	if len(rows) == 0 {
		return nil
	}
	b := tx.Bucket(outboxBucket)
	for _, row := range rows {
		r := boltRecord{ID: row.ID, Endpoint: row.Endpoint, Body: row.Event.Body, TraceParent: row.Event.TraceParent,
			Created: c.At.UnixNano(), Tx: tx.ID(), Kind: row.Kind, Version: c.Version}
		v, err := pendingValue(r)
		if err != nil {
			return err
		}
		if err := b.Put(pendingKey(row.Endpoint, c.At, r.ID), v); err != nil {
			return err
		}
	}
	return nil
}

// Claim implements outbox.Outbox.
func (o *Outbox) Claim(_ context.Context, endpoint string, max int, lease time.Duration) ([]outbox.Delivery, error) {
	if max <= 0 {
		return nil, nil
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []outbox.Delivery
	err := o.store.viewDurable(func(tx *bolt.Tx, durableTx int) error {
		prefix := append([]byte(endpoint), 0)
		due := pendingKey(endpoint, now, "\xff")
		c := tx.Bucket(outboxBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, due) <= 0 && len(out) < max; k, v = c.Next() {
			// The deliveries in flight and those delivered but not yet
			// removed sit at the head of the queue, and every claim
			// passes them: they are skipped by the id in their key,
			// without decoding their records.
			if len(k) > len(prefix)+8 {
				if until, ok := o.leased[string(k[len(prefix)+8:])]; ok && now.Before(until) {
					continue
				}
			}
			r, err := decodePending(k, v)
			if err != nil {
				return err
			}
			if r.Tx > durableTx {
				// A crash could still undo its filing. A new delivery is
				// filed due at its commit, so those not yet on disk are
				// the last due: the claim ends at the first (a retry due
				// in the same instant waits for the next claim).
				break
			}
			o.leased[r.ID] = now.Add(lease)
			out = append(out, outbox.Delivery{ID: r.ID, Endpoint: r.Endpoint, Kind: r.kind(), Version: r.Version, Body: r.Body, TraceParent: r.TraceParent,
				CreatedAt: time.Unix(0, r.Created), Attempt: r.Attempts + 1, Key: slices.Clone(k)})
		}
		return nil
	})
	return out, err
}

// settle runs fn in a write transaction and then forgets d's lease.
func (o *Outbox) settle(ctx context.Context, d outbox.Delivery, fn func(tx *bolt.Tx) error) error {
	err := o.store.Update(ctx, fn)
	o.mu.Lock()
	delete(o.leased, d.ID)
	o.mu.Unlock()
	return err
}

// Delivered implements outbox.Outbox: each delivery moves to the
// delivered bucket, filed under its endpoint, its change's commit time and
// its id, for Replay and Prune to seek.
func (o *Outbox) Delivered(ctx context.Context, ds []outbox.Delivery) error {
	err := o.store.Update(ctx, func(tx *bolt.Tx) error {
		b, delivered := tx.Bucket(outboxBucket), tx.Bucket(deliveredBucket)
		for _, d := range ds {
			if err := record(tx, d); err != nil {
				return err
			}
			r, err := o.take(b, d)
			if err != nil {
				return err
			}
			if r == nil {
				continue // dropped with its endpoint, or settled already
			}
			r.Attempts, r.LastError = d.Attempt, ""
			v, err := pendingValue(*r)
			if err != nil {
				return err
			}
			if err := delivered.Put(pendingKey(r.Endpoint, time.Unix(0, r.Created), r.ID), v); err != nil {
				return err
			}
		}
		return nil
	})
	o.mu.Lock()
	for _, d := range ds {
		delete(o.leased, d.ID)
	}
	o.mu.Unlock()
	return err
}

// Retry implements outbox.Outbox.
func (o *Outbox) Retry(ctx context.Context, d outbox.Delivery, after time.Duration, reason string) error {
	due := time.Now().Add(after)
	return o.settle(ctx, d, func(tx *bolt.Tx) error {
		if err := record(tx, d); err != nil {
			return err
		}
		b := tx.Bucket(outboxBucket)
		r, err := o.take(b, d)
		if err != nil || r == nil {
			return err
		}
		r.Attempts, r.LastError, r.Tx = d.Attempt, reason, tx.ID()
		v, err := pendingValue(*r)
		if err != nil {
			return err
		}
		return b.Put(pendingKey(r.Endpoint, due, r.ID), v)
	})
}

// Bury implements outbox.Outbox.
func (o *Outbox) Bury(ctx context.Context, d outbox.Delivery, reason string) error {
	died := time.Now().UnixNano()
	return o.settle(ctx, d, func(tx *bolt.Tx) error {
		if err := record(tx, d); err != nil {
			return err
		}
		r, err := o.take(tx.Bucket(outboxBucket), d)
		if err != nil || r == nil {
			return err
		}
		r.Attempts, r.LastError, r.Died = d.Attempt, reason, died
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return tx.Bucket(deadLetterBucket).Put([]byte(r.ID), v)
	})
}

// take removes d from the pending deliveries and returns its record; nil
// when it is gone (dropped with its endpoint).
func (o *Outbox) take(b *bolt.Bucket, d outbox.Delivery) (*boltRecord, error) {
	v := b.Get(d.Key)
	if v == nil {
		return nil, nil
	}
	r, err := decodePending(d.Key, v)
	if err != nil {
		return nil, err
	}
	return &r, b.Delete(d.Key)
}

// DeadLetters implements outbox.Outbox.
func (o *Outbox) DeadLetters(_ context.Context, endpoint string, limit int) ([]outbox.DeadLetter, error) {
	var out []outbox.DeadLetter
	err := o.view(func(tx *bolt.Tx) error {
		return tx.Bucket(deadLetterBucket).ForEach(func(_, v []byte) error {
			var r boltRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if endpoint == "" || r.Endpoint == endpoint {
				out = append(out, outbox.DeadLetter{ID: r.ID, Endpoint: r.Endpoint, Kind: r.kind(), Version: r.Version, Body: r.Body, CreatedAt: time.Unix(0, r.Created),
					DiedAt: time.Unix(0, r.Died), Attempts: r.Attempts, LastError: r.LastError})
			}
			return nil
		})
	})
	slices.SortFunc(out, func(a, b outbox.DeadLetter) int { return a.DiedAt.Compare(b.DiedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// Redeliver implements outbox.Outbox.
func (o *Outbox) Redeliver(ctx context.Context, id string, configured []string) error {
	now := time.Now()
	return o.store.Update(ctx, func(tx *bolt.Tx) error {
		dead := tx.Bucket(deadLetterBucket)
		v := dead.Get([]byte(id))
		if v == nil {
			return outbox.ErrNotFound
		}
		var r boltRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if !slices.Contains(configured, r.Endpoint) {
			return &outbox.NotConfiguredError{Endpoint: r.Endpoint}
		}
		r.Attempts, r.LastError, r.Died, r.Tx = 0, "", 0, tx.ID()
		nv, err := pendingValue(r)
		if err != nil {
			return err
		}
		if err := dead.Delete([]byte(id)); err != nil {
			return err
		}
		return tx.Bucket(outboxBucket).Put(pendingKey(r.Endpoint, now, r.ID), nv)
	})
}

// DropExcept implements outbox.Outbox.
func (o *Outbox) DropExcept(ctx context.Context, keep []string) (map[string]int, error) {
	var dropped map[string]int
	err := o.store.Update(ctx, func(tx *bolt.Tx) error {
		dropped = make(map[string]int) // the write may run again
		b := tx.Bucket(outboxBucket)
		var doomed [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil; {
			ep := string(k[:bytes.IndexByte(k, 0)])
			if slices.Contains(keep, ep) {
				k, _ = c.Seek(append([]byte(ep), 1)) // past this endpoint's keys
				continue
			}
			doomed = append(doomed, slices.Clone(k))
			dropped[ep]++
			k, _ = c.Next()
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	return dropped, err
}

// Stats implements outbox.Outbox.
func (o *Outbox) Stats(context.Context) (map[string]outbox.Stats, error) {
	out := make(map[string]outbox.Stats)
	err := o.view(func(tx *bolt.Tx) error {
		err := tx.Bucket(outboxBucket).ForEach(func(k, v []byte) error {
			if len(v) < 8 {
				return fmt.Errorf("outbox: delivery %q: a value of %d bytes", k, len(v))
			}
			ep := string(k[:bytes.IndexByte(k, 0)])
			s := out[ep]
			s.Pending++
			created := time.Unix(0, int64(binary.BigEndian.Uint64(v))) //nolint:gosec // written from a non-negative int64 (pendingValue)
			if s.OldestPending.IsZero() || created.Before(s.OldestPending) {
				s.OldestPending = created
			}
			out[ep] = s
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(deadLetterBucket).ForEach(func(_, v []byte) error {
			var r boltRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			s := out[r.Endpoint]
			s.DeadLetters++
			out[r.Endpoint] = s
			return nil
		})
	})
	return out, err
}

// view reads for the listings and the metrics, which act on nothing: a
// row whose commit is still syncing may be counted (a claim, which acts,
// filters by Tx instead).
func (o *Outbox) view(fn func(tx *bolt.Tx) error) error {
	return o.store.viewDurable(func(tx *bolt.Tx, _ int) error { return fn(tx) })
}

// maxReplay is the most events one Replay makes due: a larger replay is
// several calls, each one commit of a bounded size.
const maxReplay = 10_000

// Replay implements outbox.Outbox: the delivered events of endpoint from
// since on move back to the pending deliveries, due now, with their
// attempts counted from zero. One moved is no longer delivered, so a
// second replay finds it pending and leaves it.
func (o *Outbox) Replay(ctx context.Context, endpoint string, since time.Time, limit int) (int, error) {
	limit = min(limit, maxReplay)
	if limit <= 0 {
		return 0, nil
	}
	now := time.Now()
	var n int
	err := o.store.Update(ctx, func(tx *bolt.Tx) error {
		n = 0 // the write may run again
		delivered, pending := tx.Bucket(deliveredBucket), tx.Bucket(outboxBucket)
		prefix := append([]byte(endpoint), 0)
		var moved [][]byte
		c := delivered.Cursor()
		for k, v := c.Seek(pendingKey(endpoint, since, "")); k != nil && bytes.HasPrefix(k, prefix) && len(moved) < limit; k, v = c.Next() {
			r, err := decodePending(k, v)
			if err != nil {
				return err
			}
			r.Attempts, r.LastError, r.Tx = 0, "", tx.ID()
			nv, err := pendingValue(r)
			if err != nil {
				return err
			}
			if err := pending.Put(pendingKey(endpoint, now, r.ID), nv); err != nil {
				return err
			}
			moved = append(moved, slices.Clone(k))
		}
		for _, k := range moved {
			if err := delivered.Delete(k); err != nil {
				return err
			}
		}
		n = len(moved)
		return nil
	})
	return n, err
}

// Prune implements outbox.Outbox: in each endpoint's delivered events,
// which are filed by their change's commit time, those before before, in
// transactions of at most pruneBatch events. Pending events and dead
// letters are in other buckets. The attempts made before before go too,
// counted apart.
func (o *Outbox) Prune(ctx context.Context, before time.Time) (int, error) {
	n, err := o.pruneDelivered(ctx, before)
	if err != nil {
		return n, err
	}
	_, err = o.pruneAttempts(ctx, before)
	return n, err
}

func (o *Outbox) pruneDelivered(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int
		err := o.store.Update(ctx, func(tx *bolt.Tx) error {
			n = 0 // the write may run again
			b := tx.Bucket(deliveredBucket)
			var doomed [][]byte
			c := b.Cursor()
			for k, _ := c.First(); k != nil && len(doomed) < pruneBatch; {
				ep := k[:bytes.IndexByte(k, 0)]
				if bytes.Compare(k, pendingKey(string(ep), before, "")) < 0 {
					doomed = append(doomed, slices.Clone(k))
					k, _ = c.Next()
					continue
				}
				k, _ = c.Seek(append(slices.Clone(ep), 1)) // past this endpoint's keys
			}
			for _, k := range doomed {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			n = len(doomed)
			return nil
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}
