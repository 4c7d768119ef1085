package memstore

import (
	"context"
	"time"
)

// Options are the memory store's settings.
type Options struct {
	// ChangesRetention is how long the change log keeps a change; zero
	// keeps every change (a store built in a test, without Start).
	ChangesRetention time.Duration
}

// NewWithOptions returns an empty store with o. Its change log is pruned
// by a goroutine that Start spawns and Close stops.
func NewWithOptions(o Options) *Store {
	s := New()
	s.opts = o
	return s
}

// pruner is the goroutine pruning the change log past its retention.
type pruner struct {
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the goroutine ends; nil until Start
}

// Start spawns the goroutine that prunes the change log (none without a
// retention). Calling it again does nothing. Its signature is an Fx start
// hook's.
func (s *Store) Start(context.Context) error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.pruner.done != nil || s.pruner.stop != nil || s.opts.ChangesRetention <= 0 {
		return nil
	}
	s.pruner = pruner{stop: make(chan struct{}), done: make(chan struct{})}
	go s.prune(s.pruner)
	return nil
}

// PruneInterval is how often a store prunes what it keeps for retention:
// a tenth of it, at most a minute, so that nothing outlives its window by
// more than a tenth.
func PruneInterval(retention time.Duration) time.Duration {
	return min(retention/10, time.Minute)
}

func (s *Store) prune(p pruner) {
	defer close(p.done)
	tick := time.NewTicker(PruneInterval(s.opts.ChangesRetention))
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-tick.C:
			_, _ = s.PruneChanges(context.Background(), now.Add(-s.opts.ChangesRetention)) // memory: never fails
		}
	}
}

// Close implements plant.Store: it stops the pruning goroutine.
func (s *Store) Close() error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.pruner.stop != nil {
		close(s.pruner.stop)
		<-s.pruner.done
	}
	s.pruner = pruner{done: closedDone}
	return nil
}

// closedDone marks a stopped pruner, which Start does not spawn again.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
