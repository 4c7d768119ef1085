package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/outbox"
)

// The record of attempts, made by migration 6: every attempt filed under
// its endpoint and its sequence number (the bucket's, so the newest is
// last), and an index of them by message. The transaction that settles a
// delivery (Delivered, Retry, Bury) files its attempt, so the record never
// tells of an attempt the state does not reflect.
var (
	attemptsBucket          = []byte("webhook_attempts")
	attemptsByMessageBucket = []byte("webhook_attempts_by_message")
)

// boltAttempt is an attempt's value, after its time (8 bytes, big-endian
// Unix nanoseconds, so that Prune reads it without decoding the JSON).
type boltAttempt struct {
	Message string `json:"m"`
	Number  int    `json:"n"`
	Status  int    `json:"s,omitempty"`
	Error   string `json:"e,omitempty"`
	Latency int64  `json:"l"` // nanoseconds
	Answer  string `json:"a,omitempty"`
}

var errShortAttempt = errors.New("outbox: an attempt's value of fewer than 8 bytes")

// attemptKey files an attempt: endpoint, 0, sequence (big-endian).
func attemptKey(endpoint string, seq uint64) []byte {
	k := make([]byte, 0, len(endpoint)+1+8)
	k = append(append(k, endpoint...), 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// messageKey indexes an attempt by its message: id, 0, sequence.
func messageKey(id string, seq uint64) []byte {
	k := make([]byte, 0, len(id)+1+8)
	k = append(append(k, id...), 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// record files d's attempt, if it carries one, in tx.
func record(tx *bolt.Tx, d outbox.Delivery) error {
	a := d.Outcome
	if a == nil {
		return nil
	}
	b := tx.Bucket(attemptsBucket)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v, err := json.Marshal(boltAttempt{Message: d.ID, Number: d.Attempt, Status: a.Status, Error: a.Error,
		Latency: int64(a.Latency), Answer: a.Answer})
	if err != nil {
		return err
	}
	v = append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(v)), uint64(max(0, unixNano(a.At)))), v...) //nolint:gosec // G115: not negative
	if err := b.Put(attemptKey(d.Endpoint, seq), v); err != nil {
		return err
	}
	return tx.Bucket(attemptsByMessageBucket).Put(messageKey(d.ID, seq), []byte(d.Endpoint))
}

func decodeAttempt(endpoint string, seq uint64, v []byte) (outbox.Attempt, error) {
	var r boltAttempt
	if len(v) < 8 {
		return outbox.Attempt{}, errShortAttempt
	}
	if err := json.Unmarshal(v[8:], &r); err != nil {
		return outbox.Attempt{}, err
	}
	return outbox.Attempt{Seq: int64(seq), Message: r.Message, Endpoint: endpoint, Number: r.Number, //nolint:gosec // G115: a bucket sequence, far below 2^63
		At: time.Unix(0, int64(binary.BigEndian.Uint64(v))), Status: r.Status, Error: r.Error, //nolint:gosec // written from a non-negative int64
		Latency: time.Duration(r.Latency), Answer: r.Answer}, nil
}

// Attempts implements outbox.Attempts: a walk back from the newest (or
// from q.Before) through the endpoint's attempts.
func (o *Outbox) Attempts(_ context.Context, q outbox.AttemptQuery) ([]outbox.Attempt, error) {
	var out []outbox.Attempt
	err := o.view(func(tx *bolt.Tx) error {
		prefix := append([]byte(q.Endpoint), 0)
		start := attemptKey(q.Endpoint, uint64(q.Before)) //nolint:gosec // G115: a cursor checked positive by its reader
		if q.Before <= 0 {
			start = append(slices.Clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		}
		c := tx.Bucket(attemptsBucket).Cursor()
		k, v := c.Seek(start)
		if k == nil {
			k, v = c.Last()
		}
		for ; k != nil && len(out) < q.Limit; k, v = c.Prev() {
			if bytes.Compare(k, start) >= 0 {
				continue
			}
			if !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+8 {
				break
			}
			a, err := decodeAttempt(q.Endpoint, binary.BigEndian.Uint64(k[len(prefix):]), v)
			if err != nil {
				return err
			}
			if q.Succeeded == nil || *q.Succeeded == a.Succeeded() {
				out = append(out, a)
			}
		}
		return nil
	})
	return out, err
}

// Message implements outbox.Attempts. Dead letters are filed by id; a
// pending or delivered message is found by the id that ends its key, in
// its endpoint's keys when an attempt on record names the endpoint, else
// in all of them.
func (o *Outbox) Message(_ context.Context, id string) (outbox.Message, error) {
	var m outbox.Message
	err := o.view(func(tx *bolt.Tx) error {
		var endpoint string
		var seqs []uint64
		prefix := append([]byte(id), 0)
		c := tx.Bucket(attemptsByMessageBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			endpoint = string(v)
			seqs = append(seqs, binary.BigEndian.Uint64(k[len(prefix):]))
		}
		r, state, _, err := find(tx, id, endpoint)
		if err != nil {
			return err
		}
		m = outbox.Message{ID: r.ID, Endpoint: r.Endpoint, Kind: r.kind(), Version: r.Version, Body: r.Body,
			CreatedAt: time.Unix(0, r.Created), State: state}
		attempts := tx.Bucket(attemptsBucket)
		for _, seq := range seqs {
			v := attempts.Get(attemptKey(endpoint, seq))
			if v == nil {
				continue // pruned, its index entry not yet
			}
			a, err := decodeAttempt(endpoint, seq, v)
			if err != nil {
				return err
			}
			m.Attempts = append(m.Attempts, a)
		}
		return nil
	})
	return m, err
}

// find returns the message id's record, its state and its key in its
// state's bucket; outbox.ErrNoMessage when there is none. endpoint, when
// known, narrows the search to its keys.
func find(tx *bolt.Tx, id, endpoint string) (boltRecord, string, []byte, error) {
	if v := tx.Bucket(deadLetterBucket).Get([]byte(id)); v != nil {
		var r boltRecord
		err := json.Unmarshal(v, &r)
		return r, outbox.StateDead, []byte(id), err
	}
	for _, s := range []struct {
		bucket []byte
		state  string
	}{{outboxBucket, outbox.StatePending}, {deliveredBucket, outbox.StateDelivered}} {
		c := tx.Bucket(s.bucket).Cursor()
		var k, v []byte
		if endpoint != "" {
			k, v = c.Seek(append([]byte(endpoint), 0))
		} else {
			k, v = c.First()
		}
		for ; k != nil; k, v = c.Next() {
			if endpoint != "" && !bytes.HasPrefix(k, append([]byte(endpoint), 0)) {
				break
			}
			if !bytes.HasSuffix(k, []byte(id)) || len(k) != bytes.IndexByte(k, 0)+1+8+len(id) {
				continue
			}
			r, err := decodePending(k, v)
			return r, s.state, slices.Clone(k), err
		}
	}
	return boltRecord{}, "", nil, outbox.ErrNoMessage
}

// Resend implements outbox.Attempts: the message moves to the pending
// deliveries, due now, whatever its state. Its lease, if an attempt is in
// flight, stays until that attempt settles (which then finds the message
// gone from where it was claimed, and changes nothing): forgetting it here
// would let a claim send the message a second time while the first send's
// settling waits for its batch.
func (o *Outbox) Resend(ctx context.Context, id string, configured []string) error {
	now := time.Now()
	return o.store.Update(ctx, func(tx *bolt.Tx) error {
		var endpoint string
		prefix := append([]byte(id), 0)
		if k, v := tx.Bucket(attemptsByMessageBucket).Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
			endpoint = string(v)
		}
		r, state, key, err := find(tx, id, endpoint)
		if err != nil {
			return err
		}
		if !slices.Contains(configured, r.Endpoint) {
			return &outbox.NotConfiguredError{Endpoint: r.Endpoint}
		}
		from := map[string][]byte{outbox.StateDead: deadLetterBucket, outbox.StatePending: outboxBucket, outbox.StateDelivered: deliveredBucket}[state]
		if err := tx.Bucket(from).Delete(key); err != nil {
			return err
		}
		r.Attempts, r.LastError, r.Died, r.Tx = 0, "", 0, tx.ID()
		v, err := pendingValue(r)
		if err != nil {
			return err
		}
		return tx.Bucket(outboxBucket).Put(pendingKey(r.Endpoint, now, r.ID), v)
	})
}

// pruneAttempts removes, in each endpoint's attempts, those made before
// before, from the oldest on, in transactions of at most pruneBatch; it
// stops at an endpoint's first attempt made since (the record is in the
// order attempts ended, so one made earlier but recorded later waits for
// the next prune).
func (o *Outbox) pruneAttempts(ctx context.Context, before time.Time) (int, error) {
	limit := uint64(max(0, unixNano(before))) //nolint:gosec // G115: not negative
	total := 0
	for {
		var n int
		err := o.store.Update(ctx, func(tx *bolt.Tx) error {
			n = 0 // the write may run again
			b, byMessage := tx.Bucket(attemptsBucket), tx.Bucket(attemptsByMessageBucket)
			var doomed, index [][]byte
			c := b.Cursor()
			for k, v := c.First(); k != nil && len(doomed) < pruneBatch; {
				i := bytes.IndexByte(k, 0)
				if len(v) >= 8 && binary.BigEndian.Uint64(v) < limit {
					var r boltAttempt
					if err := json.Unmarshal(v[8:], &r); err != nil {
						return err
					}
					doomed = append(doomed, slices.Clone(k))
					index = append(index, messageKey(r.Message, binary.BigEndian.Uint64(k[i+1:])))
					k, v = c.Next()
					continue
				}
				k, v = c.Seek(append(slices.Clone(k[:i]), 1)) // past this endpoint's keys
			}
			for i := range doomed {
				if err := b.Delete(doomed[i]); err != nil {
					return err
				}
				if err := byMessage.Delete(index[i]); err != nil {
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
