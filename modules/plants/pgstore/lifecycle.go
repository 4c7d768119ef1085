package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
)

// New only builds: it parses the configuration and makes the pool, which
// connects on demand (pgx's pool runs its own health check, stopped by
// Close). The create lanes are spawned by Start, which the program calls
// from its OnStart hook after Migrate; Close (OnStop) runs what is queued
// and waits for them to end, and stops the change log's listener, notifier
// and pruner. Reads, updates and deletes need no Start; a create before
// Start fails with errNotStarted rather than wait for a lane that is not
// there.

// errNotStarted is a create's error on a store that Start has not started:
// a mistake of the program, not of the request.
var errNotStarted = errors.New("pgstore: the store is not started: call Start before creating")

// Start spawns the create lanes, and the change log's listener, notifier
// and pruner (see changelog.go). It returns at once, and calling it again does
// nothing. Its signature is an Fx start hook's.
func (s *Store) Start(context.Context) error {
	s.creates.start()
	s.startBackground()
	s.startPruner()
	return nil
}

// start spawns the lanes, once.
func (b *batcher) start() {
	if !b.started.CompareAndSwap(false, true) {
		return
	}
	for range b.lanes {
		b.stopped.Go(b.lane)
	}
}

// Pool is the store's connection pool, for a test in another package that
// reads a table the store keeps (the webhook outbox's, say).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
