package changes

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"time"
)

// A store's history. Every store has an id made at random when it is
// created and kept in it (a bolt file, a postgres database, a memory
// store's process), and every cursor it gives carries it: a cursor of
// another store is refused, never read as a position of this one.
//
// A copy of a store (a bolt file restored from a backup, a restored
// database) keeps its id but may lack changes that followers already saw,
// and cannot know which. So a cursor is accepted only at a position the
// copy holds: a change in its log, its newest pruned change, or the start
// of its log; a cursor of the lost changes, or one this store never gave
// (a forged one, one ahead of the head), is refused whatever its numbers.
// And so that a copy never gives again a position or a version that the
// lost changes had, a store's versions go on, at each open, from the wall
// clock in microseconds when that is past what it holds (VersionFloor): a
// restored copy or a fresh import starts past every version an earlier
// copy gave, as long as that one gave fewer than a million a second and
// the clock does not go back.

// ErrCursorUnknown means the cursor is not a position of this store's
// history: another store's, one a restored copy never wrote (it was given
// after the backup was taken), or one no store gave. Like a cursor past
// the retention window, the follower lists again and follows from the
// listing's cursor.
var ErrCursorUnknown = errors.New("changes: the cursor is not one this store's history holds")

// NewHistoryID returns a random history id: nonzero and below 2^63, so that
// postgres keeps it as a positive bigint.
func NewHistoryID() uint64 {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
		if id := binary.BigEndian.Uint64(b[:]) >> 1; id != 0 {
			return id
		}
	}
}

// VersionFloor is the least version a store opened at now gives: now in
// microseconds since 1970, an integer that JSON and JavaScript numbers
// carry exactly (below 2^53) until the year 2255.
func VersionFloor(now time.Time) int64 { return now.UnixMicro() }

// CheckCursor is the check every change log makes of a follower's cursor
// before it reads after it, in the read that follows: history is the
// store's id, pruned the newest pruned change's position (zero when none
// was), and held says whether the log holds a change at after. The zero
// Cursor is the start of any store's log, and the start of this one's is
// its id with a zero position: both are gone once something was pruned.
func CheckCursor(after Cursor, history uint64, pruned Cursor, held func() (bool, error)) error {
	pos := Cursor{Tx: after.Tx, Version: after.Version}
	if after.History != history && after != (Cursor{}) {
		return ErrCursorUnknown
	}
	switch {
	case pruned != (Cursor{}) && pos.Less(pruned):
		return ErrCursorGone
	case pos == pruned:
		return nil // the newest pruned change, or the start of a log never pruned
	}
	ok, err := held()
	if err != nil {
		return err
	}
	if !ok {
		return ErrCursorUnknown
	}
	return nil
}
