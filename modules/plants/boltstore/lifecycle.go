package boltstore

import "context"

// Open only builds: it opens and upgrades the file but spawns nothing. The
// group committer's goroutine is spawned by Start, which the program calls
// from its OnStart hook; Close (OnStop) commits what is queued and waits
// for it to end. A store used without Fx needs no Start: its first write
// starts the committer itself.

// Start spawns the group committer's goroutine. It returns at once, and
// calling it again does nothing. Its signature is an Fx start hook's.
func (s *Store) Start(context.Context) error {
	s.writes.start()
	return nil
}

// start spawns run, once: from Start, or from the first write.
func (c *committer) start() {
	c.started.Do(func() {
		c.spawned++
		go c.run()
	})
}
