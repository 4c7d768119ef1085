package boltstore

// CommitStats reports how many writes and transactions s has committed, so
// benchmarks can show the writes each commit carried.
func CommitStats(s *Store) (writes, commits int64) {
	return s.writes.writes.Load(), s.writes.commits.Load()
}
