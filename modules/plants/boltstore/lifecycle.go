package boltstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
)

// Open only builds: it opens and upgrades the file but spawns nothing. The
// group committer's goroutine, and with a retention the pruner's, are
// spawned by Start, which the program calls from its OnStart hook; Close
// (OnStop) stops the pruner, commits what is queued and waits for the
// committer to end. Reads need no Start; a write before Start fails with
// ErrNotStarted rather than wait for a committer that is not there.

// ErrNotStarted is a write's error on a store that Start has not started:
// a mistake of the program, not of the request.
var ErrNotStarted = errors.New("boltstore: the store is not started: call Start before writing")

// Start spawns the group committer's goroutine and, with a retention, the
// pruner's. It returns at once, and calling it again does nothing. Its
// signature is an Fx start hook's.
func (s *Store) Start(context.Context) error {
	s.writes.start()
	s.pruner.once.Do(func() {
		if s.cfg.ChangesRetention <= 0 {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.pruner.cancel, s.pruner.done = cancel, make(chan struct{})
		go s.prune(ctx)
	})
	return nil
}

// start spawns run, once.
func (c *committer) start() {
	if c.started.CompareAndSwap(false, true) {
		go c.run()
	}
}

// pruner is the goroutine that removes what is past the retention.
type pruner struct {
	once   sync.Once
	cancel context.CancelFunc // stops it; nil when none was spawned
	done   chan struct{}      // closed when it ends
}

// prune removes, at every interval, the changes and the delivered events
// committed before the retention window. A failed prune (a full disk, a
// write timing out under load) is tried again at the next tick.
func (s *Store) prune(ctx context.Context) {
	defer close(s.pruner.done)
	tick := time.NewTicker(changes.PruneInterval(s.cfg.ChangesRetention))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			before := now.Add(-s.cfg.ChangesRetention)
			_, _ = s.changes.PruneChanges(ctx, before)
			_, _ = s.outbox.Prune(ctx, before)
		}
	}
}

// stopPruner stops the pruner, if Start spawned one, and waits for it.
func (s *Store) stopPruner() {
	s.pruner.once.Do(func() {}) // a later Start spawns none
	if s.pruner.cancel != nil {
		s.pruner.cancel()
		<-s.pruner.done
		s.pruner.cancel = nil
	}
}
