package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Replace implements plant.Store. It runs in the committer like every write,
// so the comparison with match and the write share one transaction: a
// conditional update is a compare-and-swap. It returns once it is on disk.
func (s *Store) Replace(ctx context.Context, p plant.Plant, match *plant.Plant) error {
	key, value, index := encode(p)
	var matchValue []byte
	if match != nil {
		_, matchValue, _ = encode(*match)
	}
	_, err := s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) {
		old, err := storedMatching(tx, key[:], matchValue)
		if err != nil {
			return 0, err
		}
		if samePlant(old, value) {
			return 0, nil // nothing changes
		}
		before, err := decodePlant(key[:], old)
		if err != nil {
			return 0, err
		}
		if err := dropTagIndex(tx, before); err != nil {
			return 0, err
		}
		if err := tx.Bucket(plantsBucket).Put(key[:], value); err != nil {
			return 0, err
		}
		if index != nil {
			if err := tx.Bucket(tagsBucket).Put(index, []byte{}); err != nil {
				return 0, err
			}
		}
		return 0, s.changed(ctx, tx, changes.Replaced, key[:], before, value)
	})
	return err
}

// DeleteMatching implements plant.Store, in the committer like Replace.
func (s *Store) DeleteMatching(ctx context.Context, match plant.Plant) error {
	key, matchValue, _ := encode(match)
	_, err := s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) {
		old, err := storedMatching(tx, key[:], matchValue)
		if err != nil {
			return 0, err
		}
		return 0, s.remove(ctx, tx, key[:], old)
	})
	return err
}

// remove deletes the plant stored under key as old, with its tag index
// entry, and logs the deletion.
func (s *Store) remove(ctx context.Context, tx *bolt.Tx, key, old []byte) error {
	before, err := decodePlant(key, old)
	if err != nil {
		return err
	}
	if err := dropTagIndex(tx, before); err != nil {
		return err
	}
	if err := tx.Bucket(plantsBucket).Delete(key); err != nil {
		return err
	}
	return s.changed(ctx, tx, changes.Deleted, key, before, nil)
}

// storedMatching returns the value stored under key: plant.ErrNotFound when
// there is none, plant.ErrPreconditionFailed when matchValue is set and the
// stored plant differs from it. Either answer leaves tx untouched.
func storedMatching(tx *bolt.Tx, key, matchValue []byte) ([]byte, error) {
	old := tx.Bucket(plantsBucket).Get(key)
	switch {
	case old == nil:
		return nil, plant.ErrNotFound
	case matchValue != nil && !samePlant(old, matchValue):
		return nil, plant.ErrPreconditionFailed
	}
	return old, nil
}

// dropTagIndex removes the tag index entry of p, if it has a tag.
func dropTagIndex(tx *bolt.Tx, p plant.Plant) error {
	if p.Tag == nil {
		return nil
	}
	return tx.Bucket(tagsBucket).Delete(indexKey(tagDigest(*p.Tag), p.ID))
}
