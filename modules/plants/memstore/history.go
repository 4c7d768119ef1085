package memstore

import (
	"sort"

	"github.com/plantstore/plantstore/modules/changes"
)

// A memory store's history is its process's: each store is made with an
// id of its own (changes.NewHistoryID), so a follower's cursor from before a
// restart, or from another store, is refused rather than read as a position
// of this one. Its versions start at 1: a store that lost everything at a
// restart has no follower it could mislead, as each is told to list again.

// History is the store's history id, which its cursors carry.
func (s *Store) History() uint64 { return s.log.history }

// checkCursor checks a follower's cursor (changes.CheckCursor): a record is
// held at after when its version is in the log. The caller holds the
// store's lock.
func (l *changeLog) checkCursor(after changes.Cursor) error {
	return changes.CheckCursor(after, l.history, changes.Cursor{Version: l.pruned}, func() (bool, error) {
		n := l.len()
		i := sort.Search(n, func(i int) bool { return l.at(i).version >= after.Version })
		return after.Tx == 0 && i < n && l.at(i).version == after.Version, nil
	})
}
