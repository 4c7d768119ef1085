package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The change log (changes.ChangeLog), made by migration 3: one record per
// committed change, written in the change's transaction, keyed by its
// version (8 bytes, big-endian), the bucket's sequence, so the bucket's
// order is the commits' order. A record's value is
//
//	tx (8) | at (8, Unix nanoseconds) | kind (1) | plant key (8) | plant value
//
// big-endian, with the plant's value as the plants bucket holds it (none
// for Deleted). tx is the writing transaction's id: a record is read only
// once that transaction is on disk. The meta bucket's prunedKey holds the
// version of the newest record pruned (decimal), before which a cursor is
// gone.
var (
	changesBucket = []byte("changes")
	prunedKey     = []byte("changes_pruned")
)

const changeHeaderLen = 8 + 8 + 1 + keyLen

// pruneBatch bounds the records or events one prune transaction removes,
// so that a prune after a long outage is many modest commits, each
// sharing the group commit with the writes, rather than one huge one.
const pruneBatch = 1000

// logChange writes the log record of a change to the plant stored under
// key (as value; nil for Deleted) and returns its version and time.
func (s *Store) logChange(tx *bolt.Tx, kind changes.Kind, key, value []byte) (changes.Committed, error) {
	b := tx.Bucket(changesBucket)
	seq, err := b.NextSequence()
	if err != nil {
		return changes.Committed{}, err
	}
	if floor := uint64(s.versionFloor); seq < floor { //nolint:gosec // G115: a time after 1970
		// The first change of this open: past every version a copy of
		// the file may have given since it was taken.
		seq = floor
		if err := b.SetSequence(seq); err != nil {
			return changes.Committed{}, err
		}
	}
	at := time.Now()
	// One allocation for the key and the value: bbolt keeps both until
	// the transaction ends.
	buf := make([]byte, 8+changeHeaderLen+len(value))
	binary.BigEndian.PutUint64(buf, seq)
	rec := buf[8:]
	binary.BigEndian.PutUint64(rec, uint64(tx.ID()))           //nolint:gosec // G115: a transaction id is positive
	binary.BigEndian.PutUint64(rec[8:], uint64(at.UnixNano())) //nolint:gosec // G115: a time after 1970
	rec[16] = byte(kind)
	copy(rec[17:], key)
	copy(rec[changeHeaderLen:], value)
	if err := b.Put(buf[:8], rec); err != nil {
		return changes.Committed{}, err
	}
	s.writes.changed = true
	return changes.Committed{Version: int64(seq), At: time.Unix(0, at.UnixNano())}, nil //nolint:gosec // G115: a sequence below 2^63
}

// versionKey is the key of the record of version v.
func versionKey(v int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)) //nolint:gosec // G115: v >= 0
}

// decodeChange reads a record: the id of the transaction that wrote it,
// and the record.
func decodeChange(k, v []byte) (int, changes.Record, error) {
	if len(k) != 8 || len(v) < changeHeaderLen {
		return 0, changes.Record{}, fmt.Errorf("boltstore: change %x: a record of %d bytes", k, len(v))
	}
	version := int64(binary.BigEndian.Uint64(k)) //nolint:gosec // G115: written from a sequence below 2^63
	r := changes.Record{
		Cursor:  changes.Cursor{Version: version},
		Kind:    changes.Kind(v[16]),
		Version: version,
		At:      time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))), //nolint:gosec // G115: written from an int64
	}
	key := v[17:changeHeaderLen]
	if r.Kind == changes.Deleted {
		id, err := plantID(key)
		r.Plant = plant.Plant{ID: id}
		return int(binary.BigEndian.Uint64(v)), r, err //nolint:gosec // G115: written from an int
	}
	p, err := decodePlant(key, v[changeHeaderLen:])
	r.Plant = p
	return int(binary.BigEndian.Uint64(v)), r, err //nolint:gosec // G115: written from an int
}

// prunedVersion reads the version of the newest record pruned; 0 when
// none was.
func prunedVersion(tx *bolt.Tx) (int64, error) {
	v := tx.Bucket(metaBucket).Get(prunedKey)
	if v == nil {
		return 0, nil
	}
	return strconv.ParseInt(string(v), 10, 64)
}

// ChangeLog is the store's change log (changes.ChangeLog).
type ChangeLog struct{ store *Store }

// Changes returns the store's change log, whose bucket migration 3 made.
func (s *Store) Changes() *ChangeLog { return s.changes }

// Changes implements changes.ChangeLog. It reads only what is on disk
// (viewDurable): a record whose transaction is still syncing waits for
// the next call.
func (l *ChangeLog) Changes(ctx context.Context, after changes.Cursor, limit int) ([]changes.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []changes.Record
	err := l.store.viewDurable(func(tx *bolt.Tx, durableTx int) error {
		pruned, err := prunedVersion(tx)
		if err != nil {
			return err
		}
		if err := l.store.checkCursor(tx, after, pruned); err != nil {
			return err
		}
		c := tx.Bucket(changesBucket).Cursor()
		for k, v := c.Seek(versionKey(after.Version + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			writer, r, err := decodeChange(k, v)
			if err != nil {
				return err
			}
			if writer > durableTx {
				break // and so are the records after it
			}
			r.Cursor.History = l.store.history
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Head implements changes.ChangeLog: the newest record on disk; with none
// kept, the newest pruned one's cursor, which is not gone.
func (l *ChangeLog) Head(ctx context.Context) (changes.Cursor, error) {
	if err := ctx.Err(); err != nil {
		return changes.Cursor{}, err
	}
	var head changes.Cursor
	err := l.store.viewDurable(func(tx *bolt.Tx, durableTx int) error {
		pruned, err := prunedVersion(tx)
		if err != nil {
			return err
		}
		head = changes.Cursor{History: l.store.history, Version: pruned}
		c := tx.Bucket(changesBucket).Cursor()
		// Only the newest commit can be still syncing: a few steps back.
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			writer, r, err := decodeChange(k, v)
			if err != nil {
				return err
			}
			if writer <= durableTx {
				head.Version = r.Version
				return nil
			}
		}
		return nil
	})
	return head, err
}

// Wait implements changes.ChangeLog: its channel closes once the next
// commit holding a change is on disk.
func (l *ChangeLog) Wait() <-chan struct{} { return l.store.writes.durableChange.Wait() }

// PruneChanges implements changes.ChangeLog, in transactions of at most
// pruneBatch records. The records are in commit order, so the pruned
// ones are a prefix: each batch stops at the first one kept.
func (l *ChangeLog) PruneChanges(ctx context.Context, before time.Time) (int, error) {
	cut := unixNano(before)
	total := 0
	for {
		var n int
		err := l.store.Update(ctx, func(tx *bolt.Tx) error {
			n = 0 // the write may run again
			b := tx.Bucket(changesBucket)
			var doomed [][]byte
			c := b.Cursor()
			for k, v := c.First(); k != nil && len(doomed) < pruneBatch; k, v = c.Next() {
				if len(v) < changeHeaderLen {
					return fmt.Errorf("boltstore: change %x: a record of %d bytes", k, len(v))
				}
				if int64(binary.BigEndian.Uint64(v[8:])) >= cut { //nolint:gosec // G115: written from an int64
					break
				}
				doomed = append(doomed, slices.Clone(k))
			}
			if len(doomed) == 0 {
				return nil
			}
			newest := int64(binary.BigEndian.Uint64(doomed[len(doomed)-1])) //nolint:gosec // G115: a sequence below 2^63
			for _, k := range doomed {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			n = len(doomed)
			return tx.Bucket(metaBucket).Put(prunedKey, []byte(strconv.FormatInt(newest, 10)))
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}
