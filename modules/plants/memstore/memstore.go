// Package memstore is the in-memory plant.Store, for tests and quick trials:
// everything is lost when the process ends.
package memstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/btree"

	"github.com/plantstore/plantstore/internal/storekit"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Store is an in-memory plant.Store. A B-tree keeps plants in id order, so
// listing seeks to a page instead of sorting the whole set. Its records hold
// no pointers (names and tags live in texts), so that a large store adds
// next to nothing to each garbage collection: with strings in the records,
// marking them took a sixth of the service's CPU under a create load.
type Store struct {
	mu      sync.RWMutex
	records *btree.BTreeG[record]
	texts   texts
	log     changeLog // under mu

	opts   Options
	pruner storekit.Pruner // the change log's, past its retention

	endpoints *endpointstore.Memory // the webhook endpoints made through the API
}

// record is one stored plant: its id and where its name and tag are.
type record struct {
	id      int64
	text    textRef // the name, then the tag
	nameLen uint32
	hasTag  bool
}

func byID(a, b record) bool { return a.id < b.id }

// New returns an empty store.
func New() *Store {
	return &Store{records: btree.NewG(32, byID), log: changeLog{history: changes.NewHistoryID()}, endpoints: endpointstore.NewMemory()}
}

// Endpoints returns the store's webhook endpoints, in memory like its
// plants.
func (s *Store) Endpoints() endpointstore.Store { return s.endpoints }

// Create implements plant.Store.
func (s *Store) Create(_ context.Context, p plant.Plant) (plant.CreateResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records.Get(record{id: p.ID}); ok {
		if s.holds(old, p) {
			return plant.Unchanged, nil
		}
		return 0, plant.ErrConflict
	}
	tag := ""
	if p.Tag != nil {
		tag = *p.Tag
	}
	if len(p.Name)+len(tag) > maxTextLen { // far beyond any request body the API reads
		return 0, fmt.Errorf("memstore: plant %d: name and tag of %d bytes exceed %d", p.ID, len(p.Name)+len(tag), maxTextLen)
	}
	rec := record{id: p.ID, nameLen: uint32(len(p.Name)), hasTag: p.Tag != nil} //nolint:gosec // G115: at most maxTextLen
	rec.text = s.texts.add(p.Name, tag)
	s.records.ReplaceOrInsert(rec)
	s.logChange(changes.Created, p.ID, p.Name, tag, p.Tag != nil)
	return plant.Created, nil
}

// holds reports whether rec stores exactly p's name and tag.
func (s *Store) holds(rec record, p plant.Plant) bool {
	if rec.hasTag != (p.Tag != nil) || int(rec.nameLen) != len(p.Name) {
		return false
	}
	text := s.texts.bytes(rec.text)
	if string(text[:rec.nameLen]) != p.Name {
		return false
	}
	return p.Tag == nil || string(text[rec.nameLen:]) == *p.Tag
}

// plant returns rec as a plant, its strings copied out of the blocks.
func (s *Store) plant(rec record) plant.Plant {
	text := s.texts.bytes(rec.text)
	p := plant.Plant{ID: rec.id, Name: string(text[:rec.nameLen])}
	if rec.hasTag {
		p.Tag = plant.StringPtr(string(text[rec.nameLen:]))
	}
	return p
}

// hasTag reports whether rec's tag is tag, without copying it.
func (s *Store) hasTag(rec record, tag string) bool {
	return rec.hasTag && string(s.texts.bytes(rec.text)[rec.nameLen:]) == tag
}

// Get implements plant.Store.
func (s *Store) Get(_ context.Context, id int64) (plant.Plant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rec, ok := s.records.Get(record{id: id})
	if !ok {
		return plant.Plant{}, plant.ErrNotFound
	}
	return s.plant(rec), nil
}

// List implements plant.Store.
func (s *Store) List(_ context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.list(q), nil
}

// list is List's page; the caller holds the lock.
func (s *Store) list(q plant.ListQuery) []plant.Plant {
	out := make([]plant.Plant, 0, min(q.Limit, s.records.Len()))
	collect := func(rec record) bool {
		if q.After != nil && rec.id == *q.After {
			return true
		}
		if q.Tag == nil || s.hasTag(rec, *q.Tag) {
			out = append(out, s.plant(rec))
		}
		return len(out) < q.Limit
	}
	if q.After == nil {
		s.records.Ascend(collect)
	} else {
		s.records.AscendGreaterOrEqual(record{id: *q.After}, collect)
	}
	return out
}

// Delete implements plant.Store.
func (s *Store) Delete(_ context.Context, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records.Delete(record{id: id})
	if !ok {
		return plant.ErrNotFound
	}
	s.texts.drop(rec.text)
	if s.texts.wasteful() {
		s.compact()
	}
	s.logChange(changes.Deleted, id, "", "", false)
	return nil
}

// compact copies the live texts into fresh blocks, so that memory freed by
// deletes returns to the runtime. It runs when deleted texts outweigh live
// ones, so its cost is at most that of the creates since the last one.
func (s *Store) compact() {
	var fresh texts
	records := btree.NewG(32, byID)
	s.records.Ascend(func(rec record) bool {
		rec.text = fresh.addBytes(s.texts.bytes(rec.text))
		records.ReplaceOrInsert(rec)
		return true
	})
	s.records, s.texts = records, fresh
}

// Ping implements plant.Store; memory is always reachable.
func (s *Store) Ping(context.Context) error { return nil }
