package boltstore

import (
	"context"
	"errors"
)

// Open only builds: it opens and upgrades the file but spawns nothing. The
// group committer's goroutine is spawned by Start, which the program calls
// from its OnStart hook; Close (OnStop) commits what is queued and waits
// for it to end. Reads need no Start; a write before Start fails with
// ErrNotStarted rather than wait for a committer that is not there.

// ErrNotStarted is a write's error on a store that Start has not started:
// a mistake of the program, not of the request.
var ErrNotStarted = errors.New("boltstore: the store is not started: call Start before writing")

// Start spawns the group committer's goroutine. It returns at once, and
// calling it again does nothing. Its signature is an Fx start hook's.
func (s *Store) Start(context.Context) error {
	s.writes.start()
	return nil
}

// start spawns run, once.
func (c *committer) start() {
	if c.started.CompareAndSwap(false, true) {
		go c.run()
	}
}
