package boltstore

import (
	"context"
	"errors"
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
	if r := s.cfg.ChangesRetention; r > 0 {
		s.pruner.Start(changes.PruneInterval(r), s.prune)
	}
	return nil
}

// start spawns run, once.
func (c *committer) start() {
	if c.started.CompareAndSwap(false, true) {
		go c.run()
	}
}

// prune removes the changes and the delivered events committed before the
// retention window that ends at now.
func (s *Store) prune(ctx context.Context, now time.Time) {
	before := now.Add(-s.cfg.ChangesRetention)
	_, _ = s.changes.PruneChanges(ctx, before)
	_, _ = s.outbox.Prune(ctx, before)
}
