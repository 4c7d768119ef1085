package memstore

import (
	"context"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
)

// Options are the memory store's settings.
type Options struct {
	// ChangesRetention is how long the change log keeps a change; zero
	// keeps every change, as on every store.
	ChangesRetention time.Duration
	// History, when not zero, is the store's history id, which its
	// cursors carry: a test's, to spell them. Zero makes one at random,
	// as New does.
	History uint64
}

// NewWithOptions returns an empty store with o. Its change log is pruned
// by a goroutine that Start spawns and Close stops.
func NewWithOptions(o Options) *Store {
	s := New()
	s.opts = o
	if o.History != 0 {
		s.log.history = o.History
	}
	return s
}

// Start spawns the goroutine that prunes the change log every tenth of
// the retention (none without a retention). Calling it again does
// nothing. Its signature is an Fx start hook's.
func (s *Store) Start(context.Context) error {
	if r := s.opts.ChangesRetention; r > 0 {
		s.pruner.Start(changes.PruneInterval(r), func(ctx context.Context, now time.Time) {
			_, _ = s.PruneChanges(ctx, now.Add(-r)) // memory: fails only once ctx is done
		})
	}
	return nil
}

// Close implements plant.Store: it stops the pruning goroutine.
func (s *Store) Close() error {
	s.pruner.Stop()
	return nil
}
