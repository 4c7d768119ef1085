// Package boltstore is the embedded plant.Store: one bbolt file, plants.db,
// in the data dir. Every write is on disk (fsync) before it returns, and
// concurrent writes share a commit (see commit.go). Plants are keyed by id
// in an order-preserving encoding, so a page is a seek and a short scan
// wherever it starts, and a tag index keeps filtered pages as cheap.
package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/internal/storekit"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

var (
	plantsBucket = []byte("plants")
	tagsBucket   = []byte("plants_by_tag")
	metaBucket   = []byte("meta")
	formatKey    = []byte("format")
)

// Store is the bbolt plant.Store. It is safe for concurrent use.
type Store struct {
	db      *bolt.DB
	writes  *committer
	hook    changeHook // nil: a change writes the plant and its log record only
	outbox  *Outbox
	changes *ChangeLog
	cfg     Config
	pruner  storekit.Pruner // past the retention: see lifecycle.go
	history uint64          // the file's history id: see history.go
	// versionFloor is the least version this open gives: the clock's
	// microseconds at the open (see history.go).
	versionFloor int64
}

// changeHook writes what goes with a committed change (the outbox's
// rows: see Outbox.OnChange) in the transaction that makes it, so that
// both are on disk or neither is. A store has one hook.
type changeHook interface {
	// changed runs only for a change this transaction commits, never for
	// an identical re-create or PUT, an answer, or a DELETE of a missing
	// plant; c.Before is the plant as the transaction read it. committed
	// is what the change's log record was given. An error from it is a
	// failure of that write: the batch is re-run without it. Like every
	// write it may run more than once for one change (a batch re-run after
	// another write's failure) and must depend on the transaction's state
	// only.
	//
	// c.Ctx is the write's own, for what the hook records of its request
	// (an event's trace parent); the transaction is the committer's and
	// outlives it.
	changed(tx *bolt.Tx, c changes.Change, committed changes.Committed) error
}

// Create implements plant.Store. It returns once the plant is on disk.
//
// A create of an id already on disk (a client's retry, most often) is
// answered from a read: identical is Unchanged, different a conflict. It
// needs no commit, so retries cost neither an fsync nor a place in a batch.
func (s *Store) Create(ctx context.Context, p plant.Plant) (plant.CreateResult, error) {
	key, value, index := encode(p)
	if settled, err := s.settledOnDisk(key[:], value); settled {
		if err != nil {
			return 0, err
		}
		return plant.Unchanged, nil
	}
	return s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) {
		res, err := create(tx, key[:], value, index)
		if res == plant.Created {
			err = s.changed(ctx, tx, changes.Created, key[:], plant.Plant{}, value)
		}
		return res, err
	})
}

// changed logs a change committed in tx, and runs the hook with it:
// the plant stored under key was before (zero for Created) and is value
// (nil for Deleted). The plant is decoded from its value rather than
// captured from the write's argument, and only for a hook, so that
// without one a create allocates no plant.
func (s *Store) changed(ctx context.Context, tx *bolt.Tx, kind changes.Kind, key []byte, before plant.Plant, value []byte) error {
	committed, err := s.logChange(tx, kind, key, value)
	if err != nil || s.hook == nil {
		return err
	}
	c := changes.Change{Ctx: ctx, Kind: kind, Before: before}
	if value != nil {
		if c.After, err = decodePlant(key, value); err != nil {
			return err
		}
	}
	return s.hook.changed(tx, c, committed)
}

// settledOnDisk answers a create from what is on disk, when a plant is
// stored under key there.
func (s *Store) settledOnDisk(key, value []byte) (settled bool, err error) {
	viewErr := s.db.View(func(tx *bolt.Tx) error {
		old := tx.Bucket(plantsBucket).Get(key)
		if old == nil || !s.writes.onDisk(tx) {
			return nil
		}
		settled = true
		if !samePlant(old, value) {
			err = plant.ErrConflict
		}
		return nil
	})
	if viewErr != nil { // the write path meets the same failure and reports it
		return false, nil
	}
	return settled, err
}

// encode returns p's key, value and tag index key (nil without a tag).
func encode(p plant.Plant) (key [keyLen]byte, value, index []byte) {
	key = plantKey(p.ID)
	value = appendValue(make([]byte, 0, valueLen(p)), p)
	if p.Tag != nil {
		index = indexKey(tagDigest(*p.Tag), p.ID)
	}
	return key, value, index
}

// create stores a plant under key with value and, when it has a tag, its
// tag index key, unless an identical plant is stored already.
func create(tx *bolt.Tx, key, value, index []byte) (plant.CreateResult, error) {
	plants := tx.Bucket(plantsBucket)
	if old := plants.Get(key); old != nil {
		if samePlant(old, value) {
			return plant.Unchanged, nil
		}
		return 0, plant.ErrConflict
	}
	if err := plants.Put(key, value); err != nil {
		return 0, err
	}
	if index != nil {
		if err := tx.Bucket(tagsBucket).Put(index, []byte{}); err != nil {
			return 0, err
		}
	}
	return plant.Created, nil
}

// Delete implements plant.Store. It returns once the deletion is on disk.
func (s *Store) Delete(ctx context.Context, id int64) error {
	key := plantKey(id)
	_, err := s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) {
		old, err := storedMatching(tx, key[:], nil)
		if err != nil {
			return 0, err
		}
		return 0, s.remove(ctx, tx, key[:], old)
	})
	return err
}

// Get implements plant.Store.
func (s *Store) Get(ctx context.Context, id int64) (plant.Plant, error) {
	if err := ctx.Err(); err != nil {
		return plant.Plant{}, err
	}
	var p plant.Plant
	err := s.db.View(func(tx *bolt.Tx) error {
		key := plantKey(id)
		v := tx.Bucket(plantsBucket).Get(key[:])
		if v == nil {
			return plant.ErrNotFound
		}
		var err error
		p, err = decodePlant(key[:], v)
		return err
	})
	return p, err
}

// List implements plant.Store: a seek to the cursor, then a scan of at most
// q.Limit plants, in the plants bucket or, with a tag, in the tag index.
func (s *Store) List(ctx context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return nil, fmt.Errorf("boltstore: list limit %d is not positive", q.Limit)
	}
	out := make([]plant.Plant, 0, min(q.Limit, 128))
	err := s.db.View(func(tx *bolt.Tx) error {
		if q.Tag == nil {
			return listAll(tx, q, &out)
		}
		return listTag(tx, q, &out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func listAll(tx *bolt.Tx, q plant.ListQuery, out *[]plant.Plant) error {
	c := tx.Bucket(plantsBucket).Cursor()
	k, v := c.First()
	if q.After != nil {
		after := plantKey(*q.After)
		if k, v = c.Seek(after[:]); bytes.Equal(k, after[:]) {
			k, v = c.Next()
		}
	}
	for ; k != nil && len(*out) < q.Limit; k, v = c.Next() {
		p, err := decodePlant(k, v)
		if err != nil {
			return err
		}
		*out = append(*out, p)
	}
	return nil
}

func listTag(tx *bolt.Tx, q plant.ListQuery, out *[]plant.Plant) error {
	// One cursor for the lookups: Bucket.Get would allocate one per plant.
	plants := tx.Bucket(plantsBucket).Cursor()
	digest := tagDigest(*q.Tag)
	c := tx.Bucket(tagsBucket).Cursor()
	k, _ := c.Seek(digest[:])
	if q.After != nil {
		after := indexKey(digest, *q.After)
		if k, _ = c.Seek(after); bytes.Equal(k, after) {
			k, _ = c.Next()
		}
	}
	for ; bytes.HasPrefix(k, digest[:]) && len(*out) < q.Limit; k, _ = c.Next() {
		key := k[digestLen:]
		pk, v := plants.Seek(key)
		if !bytes.Equal(pk, key) {
			id, _ := plantID(key)
			return fmt.Errorf("boltstore: tag index names plant %d, which is not stored", id)
		}
		p, err := decodePlant(key, v)
		if err != nil {
			return err
		}
		if p.Tag != nil && *p.Tag == *q.Tag { // a digest collision is skipped
			*out = append(*out, p)
		}
	}
	return nil
}

// Ping implements plant.Store: the file is open and readable.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(plantsBucket) == nil {
			return errors.New("boltstore: plants bucket is missing")
		}
		return nil
	})
}

// Close commits the writes already queued and closes the file.
func (s *Store) Close() error {
	s.pruner.Stop()
	s.writes.close()
	return s.db.Close()
}
