package memstore

import (
	"context"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
)

// Options are the memory store's settings.
type Options struct {
	// ChangesRetention is how long the change log keeps a change; zero
	// keeps every change (a store built in a test, without Start).
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

// pruner is the goroutine pruning the change log past its retention.
type pruner struct {
	cancel context.CancelFunc // stops it; nil when none runs
	done   chan struct{}      // closed when it ends
	closed bool               // Close ran: Start spawns nothing
}

// Start spawns the goroutine that prunes the change log (none without a
// retention). Calling it again does nothing. Its signature is an Fx start
// hook's.
func (s *Store) Start(context.Context) error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.pruner.cancel != nil || s.pruner.closed || s.opts.ChangesRetention <= 0 {
		return nil
	}
	// Its own context: the start hook's ends with the start.
	ctx, cancel := context.WithCancel(context.Background())
	s.pruner.cancel, s.pruner.done = cancel, make(chan struct{})
	go s.prune(ctx, s.pruner.done)
	return nil
}

func (s *Store) prune(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(changes.PruneInterval(s.opts.ChangesRetention))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			_, _ = s.PruneChanges(ctx, now.Add(-s.opts.ChangesRetention)) // memory: fails only once ctx is done
		}
	}
}

// Close implements plant.Store: it stops the pruning goroutine.
func (s *Store) Close() error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.pruner.cancel != nil {
		s.pruner.cancel()
		<-s.pruner.done
		s.pruner.cancel = nil
	}
	s.pruner.closed = true
	return nil
}
