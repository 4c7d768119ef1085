package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// New only builds: it parses the configuration and makes the pool, which
// connects on demand (pgx's pool runs its own health check, stopped by
// Close). The create lanes are spawned by Start, which the program calls
// from its OnStart hook after Migrate; Close (OnStop) runs what is queued
// and waits for them to end. A store used without Fx needs no Start: its
// first create starts the lanes itself (but without Start, Wait hears of
// this process's changes only, and nothing is pruned).

// Start spawns the create lanes, and the change log's listener and pruner
// (see changelog.go). It returns at once, and calling it again does
// nothing. Its signature is an Fx start hook's.
func (s *Store) Start(context.Context) error {
	s.creates.start()
	s.startBackground()
	return nil
}

// start spawns the lanes, once: from Start, or from the first create.
func (b *batcher) start() {
	b.started.Do(func() {
		for range b.lanes {
			b.spawned++
			b.stopped.Go(b.lane)
		}
	})
}

// Pool is the store's connection pool, for what another module keeps in
// the same database: the webhook outbox, whose table migration 0003 makes
// and whose rows the CreateHook writes in the statement inserting the plant.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
