package memstore

import (
	"context"
	"fmt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Replace implements plant.Store. The check and the write happen under one
// lock, so a conditional update is a compare-and-swap.
func (s *Store) Replace(_ context.Context, p plant.Plant, match *plant.Plant) error {
	tag := ""
	if p.Tag != nil {
		tag = *p.Tag
	}
	if len(p.Name)+len(tag) > maxTextLen {
		return fmt.Errorf("memstore: plant %d: name and tag of %d bytes exceed %d", p.ID, len(p.Name)+len(tag), maxTextLen)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records.Get(record{id: p.ID})
	if !ok {
		return plant.ErrNotFound
	}
	if match != nil && !s.holds(old, *match) {
		return plant.ErrPreconditionFailed
	}
	if s.holds(old, p) {
		return nil // nothing changes: no new text to keep
	}
	s.texts.drop(old.text)
	rec := record{id: p.ID, nameLen: uint32(len(p.Name)), hasTag: p.Tag != nil} //nolint:gosec // G115: at most maxTextLen
	rec.text = s.texts.add(p.Name, tag)
	s.records.ReplaceOrInsert(rec)
	if s.texts.wasteful() {
		s.compact()
	}
	s.logChange(changes.Replaced, p.ID, p.Name, tag, p.Tag != nil)
	return nil
}

// DeleteMatching implements plant.Store.
func (s *Store) DeleteMatching(_ context.Context, match plant.Plant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.records.Get(record{id: match.ID})
	if !ok {
		return plant.ErrNotFound
	}
	if !s.holds(old, match) {
		return plant.ErrPreconditionFailed
	}
	s.records.Delete(old)
	s.texts.drop(old.text)
	if s.texts.wasteful() {
		s.compact()
	}
	s.logChange(changes.Deleted, match.ID, "", "", false)
	return nil
}
