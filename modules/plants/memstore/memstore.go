// Package memstore is the in-memory plant.Store, for tests and quick trials:
// everything is lost when the process ends.
package memstore

import (
	"context"
	"sync"

	"github.com/google/btree"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Store is an in-memory plant.Store. A B-tree keeps plants in id order, so
// listing seeks to a page instead of sorting the whole set.
type Store struct {
	mu     sync.RWMutex
	plants *btree.BTreeG[plant.Plant]
}

// New returns an empty store.
func New() *Store {
	return &Store{plants: btree.NewG(32, func(a, b plant.Plant) bool { return a.ID < b.ID })}
}

// Create implements plant.Store.
func (s *Store) Create(_ context.Context, p plant.Plant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.plants.Get(p); ok {
		if old.Equal(p) {
			return nil
		}
		return plant.ErrConflict
	}
	s.plants.ReplaceOrInsert(p)
	return nil
}

// Get implements plant.Store.
func (s *Store) Get(_ context.Context, id int64) (plant.Plant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.plants.Get(plant.Plant{ID: id})
	if !ok {
		return plant.Plant{}, plant.ErrNotFound
	}
	return p, nil
}

// List implements plant.Store.
func (s *Store) List(_ context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]plant.Plant, 0, min(q.Limit, s.plants.Len()))
	collect := func(p plant.Plant) bool {
		if q.After != nil && p.ID == *q.After {
			return true
		}
		if q.Tag == nil || (p.Tag != nil && *p.Tag == *q.Tag) {
			out = append(out, p)
		}
		return len(out) < q.Limit
	}
	if q.After == nil {
		s.plants.Ascend(collect)
	} else {
		s.plants.AscendGreaterOrEqual(plant.Plant{ID: *q.After}, collect)
	}
	return out, nil
}

// Delete implements plant.Store.
func (s *Store) Delete(_ context.Context, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.plants.Delete(plant.Plant{ID: id}); !ok {
		return plant.ErrNotFound
	}
	return nil
}

// Ping implements plant.Store; memory is always reachable.
func (s *Store) Ping(context.Context) error { return nil }

// Close implements plant.Store.
func (s *Store) Close() error { return nil }
