package memstore

import (
	"context"
	"sort"
	"time"

	"github.com/plantstore/plantstore/internal/storekit"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// changeLog is the store's changes.ChangeLog, kept under the store's lock:
// one record per committed change, oldest first. Like the plants, its
// records hold no pointers (their names and tags live in texts of their
// own), so that a log of a retention window's creates adds next to
// nothing to a garbage collection.
type changeLog struct {
	// chunks hold the records, chunkLen each (the last one filling up):
	// a log that grows by whole chunks copies no record as it grows, and
	// costs each create its record's bytes alone. The oldest record kept
	// is chunks[0][first].
	chunks  [][]change
	first   int
	texts   texts
	version int64  // the last version given
	history uint64 // the store's history id: see history.go
	// pruned is the version of the newest record removed, 0 when none
	// was: a cursor before it is gone.
	pruned int64
	// changed wakes the followers at each change (Wait).
	changed storekit.Waker
}

// chunkLen is how many records a chunk of the log holds.
const chunkLen = 4096

// len is how many records the log keeps.
func (l *changeLog) len() int {
	if len(l.chunks) == 0 {
		return 0
	}
	return (len(l.chunks)-1)*chunkLen + len(l.chunks[len(l.chunks)-1]) - l.first
}

// at returns the i-th record kept, from the oldest.
func (l *changeLog) at(i int) *change {
	i += l.first
	return &l.chunks[i/chunkLen][i%chunkLen]
}

// push appends c.
func (l *changeLog) push(c change) {
	if n := len(l.chunks); n == 0 || len(l.chunks[n-1]) == chunkLen {
		l.chunks = append(l.chunks, make([]change, 0, chunkLen))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, c)
}

// drop forgets the n oldest records.
func (l *changeLog) drop(n int) {
	l.first += n
	for l.first >= chunkLen || (len(l.chunks) == 1 && l.first == len(l.chunks[0])) {
		l.first -= len(l.chunks[0])
		l.chunks[0] = nil
		l.chunks = l.chunks[1:]
		if len(l.chunks) == 0 {
			l.chunks, l.first = nil, 0
			return
		}
	}
}

// change is one record of the log.
type change struct {
	version int64
	at      int64 // Unix nanoseconds
	id      int64
	text    textRef // the name, then the tag; empty for Deleted
	nameLen uint32
	kind    changes.Kind
	hasTag  bool
}

// logChange records a committed change of plant id (its name and tag as
// they now are; none for Deleted), with the next version. The caller holds
// the store's lock.
func (s *Store) logChange(kind changes.Kind, id int64, name, tag string, hasTag bool) {
	l := &s.log
	l.version++
	c := change{version: l.version, at: time.Now().UnixNano(), id: id, kind: kind}
	if kind != changes.Deleted {
		c.text = l.texts.add(name, tag)
		c.nameLen, c.hasTag = uint32(len(name)), hasTag //nolint:gosec // G115: at most maxTextLen (checked by the writes)
	}
	l.push(c)
	l.changed.Wake()
}

// record spells c as the log's reader sees it.
func (l *changeLog) record(c change) changes.Record {
	p := plant.Plant{ID: c.id}
	if c.kind != changes.Deleted {
		text := l.texts.bytes(c.text)
		p.Name = string(text[:c.nameLen])
		if c.hasTag {
			p.Tag = plant.StringPtr(string(text[c.nameLen:]))
		}
	}
	return changes.Record{Cursor: changes.Cursor{History: l.history, Version: c.version}, Kind: c.kind, Version: c.version, Plant: p, At: time.Unix(0, c.at)}
}

// Changes implements changes.ChangeLog: every change is on its record as
// soon as its write returns (memory is as durable as this store gets).
func (s *Store) Changes(ctx context.Context, after changes.Cursor, limit int) ([]changes.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	l := &s.log
	if err := l.checkCursor(after); err != nil {
		return nil, err
	}
	n := l.len()
	i := sort.Search(n, func(i int) bool { return l.at(i).version > after.Version })
	out := make([]changes.Record, 0, max(0, min(limit, n-i)))
	for ; i < n && len(out) < limit; i++ {
		out = append(out, l.record(*l.at(i)))
	}
	return out, nil
}

// Head implements changes.ChangeLog: the newest record's cursor; with none
// kept, the newest pruned one's, which is not gone.
func (s *Store) Head(ctx context.Context) (changes.Cursor, error) {
	if err := ctx.Err(); err != nil {
		return changes.Cursor{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.log.head(), nil
}

// head is Head; the caller holds the store's lock.
func (l *changeLog) head() changes.Cursor {
	if n := l.len(); n > 0 {
		return changes.Cursor{History: l.history, Version: l.at(n - 1).version}
	}
	return changes.Cursor{History: l.history, Version: l.pruned}
}

// Wait implements changes.ChangeLog.
func (s *Store) Wait() <-chan struct{} { return s.log.changed.Wait() }

// PruneChanges implements changes.ChangeLog. Records are in commit order,
// so the pruned ones are a prefix: the scan stops at the first one kept.
func (s *Store) PruneChanges(ctx context.Context, before time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cut := before.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &s.log
	n, kept := 0, l.len()
	for n < kept && l.at(n).at < cut {
		l.texts.drop(l.at(n).text)
		n++
	}
	if n == 0 {
		return 0, nil
	}
	l.pruned = l.at(n - 1).version
	l.drop(n)
	if l.texts.wasteful() {
		var fresh texts
		for i := range l.len() {
			if c := l.at(i); c.kind != changes.Deleted {
				c.text = fresh.addBytes(l.texts.bytes(c.text))
			}
		}
		l.texts = fresh
	}
	return n, nil
}
