package memstore

import (
	"context"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Snapshot implements changes.Snapshotter: the page and the log's head are
// read under one hold of the store's lock, which every change takes to
// write its plant and its record, so the page shows exactly the changes up
// to the head. Versions are given in commit order, so the head's is past
// every change the page shows and below every change after it.
func (s *Store) Snapshot(ctx context.Context, q changes.SnapshotQuery) (changes.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return changes.Snapshot{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	head := s.log.head()
	return changes.Snapshot{
		Plants:  s.list(plant.ListQuery{After: q.After, Tag: q.Tag, Limit: q.Limit}),
		Head:    head,
		Version: head.Version,
	}, nil
}
