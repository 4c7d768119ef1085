package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

var _ plant.BatchCreator = (*Store)(nil)

// CreateBatch implements plant.BatchCreator: the plants of the bulk
// import, thousands at a time, as one write of the group commit, so that
// they share a transaction and its two fdatasyncs rather than paying them
// a batch of concurrent creates at a time. Each plant created logs its
// change and runs the hook in that transaction, as Create does: one
// change and one event per plant created, none for the others.
//
// Plants already on disk are answered from a read first, as Create
// answers them, so that a resumed import's lines that were stored before
// cost no commit; only the rest is written.
func (s *Store) CreateBatch(ctx context.Context, ps []plant.Plant) ([]plant.BatchResult, error) {
	results := make([]plant.BatchResult, len(ps))
	type encoded struct {
		i               int
		key             [keyLen]byte
		value, indexKey []byte
	}
	rest := make([]encoded, 0, len(ps))
	for i, p := range ps {
		key, value, index := encode(p)
		rest = append(rest, encoded{i: i, key: key, value: value, indexKey: index})
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if !s.writes.onDisk(tx) {
			return nil // the newest commit is still syncing: the write answers all
		}
		plants := tx.Bucket(plantsBucket)
		unsettled := rest[:0]
		for _, e := range rest {
			old := plants.Get(e.key[:])
			if old == nil {
				unsettled = append(unsettled, e)
				continue
			}
			r, err := settled(e.key[:], old, e.value)
			if err != nil {
				return err
			}
			results[e.i] = r
		}
		rest = unsettled
		return nil
	}); err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		return results, nil
	}
	// The write may run more than once (a batch re-run after another
	// write's failure): it sets every result it answers each time.
	_, err := s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) {
		plants, tags := tx.Bucket(plantsBucket), tx.Bucket(tagsBucket)
		for _, e := range rest {
			if old := plants.Get(e.key[:]); old != nil {
				r, err := settled(e.key[:], old, e.value)
				if err != nil {
					return 0, err
				}
				results[e.i] = r
				continue
			}
			if err := plants.Put(e.key[:], e.value); err != nil {
				return 0, err
			}
			if e.indexKey != nil {
				if err := tags.Put(e.indexKey, []byte{}); err != nil {
					return 0, err
				}
			}
			if err := s.changed(ctx, tx, changes.Created, e.key[:], plant.Plant{}, e.value); err != nil {
				return 0, err
			}
			results[e.i] = plant.BatchResult{Result: plant.Created}
		}
		return 0, nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// settled is the answer to a create of value under key, which holds old:
// unchanged when they are the same plant, else a conflict with the plant
// stored.
func settled(key, old, value []byte) (plant.BatchResult, error) {
	if samePlant(old, value) {
		return plant.BatchResult{Result: plant.Unchanged}, nil
	}
	stored, err := decodePlant(key, old)
	if err != nil {
		return plant.BatchResult{}, err
	}
	return plant.BatchResult{Err: plant.ErrConflict, Stored: stored}, nil
}
