// Package memstore is the in-memory plant.Store, for tests and quick trials:
// everything is lost when the process ends.
package memstore

import (
	"context"
	"sync"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Store is an in-memory plant.Store.
type Store struct {
	mu     sync.RWMutex
	plants map[int64]plant.Plant
}

// New returns an empty store.
func New() *Store {
	return &Store{plants: make(map[int64]plant.Plant)}
}

// Create implements plant.Store.
func (s *Store) Create(_ context.Context, p plant.Plant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.plants[p.ID]; ok {
		if old.Equal(p) {
			return nil
		}
		return plant.ErrConflict
	}
	s.plants[p.ID] = p
	return nil
}

// Get implements plant.Store.
func (s *Store) Get(_ context.Context, id int64) (plant.Plant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.plants[id]
	if !ok {
		return plant.Plant{}, plant.ErrNotFound
	}
	return p, nil
}

// Ping implements plant.Store; memory is always reachable.
func (s *Store) Ping(context.Context) error { return nil }

// Close implements plant.Store.
func (s *Store) Close() error { return nil }
