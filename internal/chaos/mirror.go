package chaos

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// A follower of every change (the envelope webhooks, the change feed)
// builds a mirror of the store: per id, the change with the highest
// version it has seen. Of two changes of one plant the later has the
// greater version, so once every change has arrived, in whatever order,
// the mirror is the store: it must equal the final reads.

// change is one announced change, as an envelope or the feed gives it.
type change struct {
	Type    string // plant.created, plant.updated, plant.deleted
	ID      int64
	Version int64
	At      time.Time // the commit's time, as the store's clock gave it
	Plant   Plant     // the plant after the change; Name "" for plant.deleted
}

// The event types.
const (
	typeCreated = "plant.created"
	typeUpdated = "plant.updated"
	typeDeleted = "plant.deleted"
)

// eventTime is the layout of an envelope's and a feed change's timestamp.
const eventTime = "2006-01-02T15:04:05.000Z07:00"

// wellFormed says what is wrong with c as a change of the contract, or "".
func (c change) wellFormed() string {
	switch {
	case c.Type != typeCreated && c.Type != typeUpdated && c.Type != typeDeleted:
		return fmt.Sprintf("type %q", c.Type)
	case c.ID <= 0 || c.Version <= 0:
		return fmt.Sprintf("id %d, version %d", c.ID, c.Version)
	case c.At.IsZero():
		return "no timestamp"
	case c.Type == typeDeleted && c.Plant != (Plant{}):
		return "a plant.deleted with a plant"
	case c.Type != typeDeleted && (c.Plant.ID != c.ID || c.Plant.Name == ""):
		return fmt.Sprintf("%s with plant %+v", c.Type, c.Plant)
	}
	return ""
}

// mirror is, per id, the change with the highest version applied.
type mirror map[int64]change

// apply keeps c if it is newer than what m has for its id, and says so; an
// older one is stale (it arrived after a later change of the plant).
func (m mirror) apply(c change) bool {
	if cur, ok := m[c.ID]; ok && cur.Version >= c.Version {
		return false
	}
	m[c.ID] = c
	return true
}

// state is the plant m has for id: Name "" when absent.
func (m mirror) state(id int64) Plant {
	c, ok := m[id]
	if !ok || c.Type == typeDeleted {
		return Plant{ID: id}
	}
	return c.Plant
}

// finalRead is an id's final read: the plant (Name "" for a 404) and when
// it was invoked.
type finalRead struct {
	Plant Plant
	Call  time.Duration
}

// finalReads are the final reads a mirror is compared with, found as the
// survivor check finds them (the latest get of the id with a definite
// answer), and kept only when invoked after every write of the id returned:
// a read during the load is not the store's final state.
func finalReads(ops []Op) map[int64]finalRead {
	final := map[int64]Op{}
	lastWrite := map[int64]time.Duration{}
	for _, op := range ops {
		switch {
		case op.Kind == Get && (op.Answer == OK || op.Answer == NotFound):
			if f, ok := final[op.ID]; !ok || op.Call > f.Call {
				final[op.ID] = op
			}
		case op.Kind == Create || op.Kind == Update || op.Kind == Delete:
			lastWrite[op.ID] = max(lastWrite[op.ID], op.Return)
		}
	}
	reads := make(map[int64]finalRead, len(final))
	for id, f := range final {
		if w, ok := lastWrite[id]; ok && f.Call <= w {
			continue
		}
		p := Plant{ID: id}
		if f.Answer == OK {
			p = f.Got
		}
		reads[id] = finalRead{Plant: p, Call: f.Call}
	}
	return reads
}

// mirrorDiff is a mirror held against the final reads.
type mirrorDiff struct {
	Compared int      // ids with a final read
	Differ   []string // ids whose mirror is not their final read, one line each
	// Late are ids that differ whose newest change was committed after
	// their final read was invoked (a write whose client gave up, committed
	// late): the read could not show it, so they are not compared.
	Late int
}

// compareMirror holds m against reads; wall gives a history time as the
// clock's time (the changes' timestamps are the store's clock, on this
// machine). name says whose mirror it is, in each line.
func compareMirror(name string, m mirror, reads map[int64]finalRead, wall func(time.Duration) time.Time) mirrorDiff {
	var d mirrorDiff
	for _, id := range slices.Sorted(maps.Keys(reads)) {
		f := reads[id]
		d.Compared++
		got := m.state(id)
		if got == f.Plant {
			continue
		}
		c, ok := m[id]
		if ok && wall != nil && c.At.After(wall(f.Call)) {
			d.Late++
			continue
		}
		newest := "no change"
		if ok {
			newest = fmt.Sprintf("newest change %s version %d", c.Type, c.Version)
		}
		d.Differ = append(d.Differ, fmt.Sprintf("id %d: final read %s, %s has %s (%s)", id, describe(f.Plant), name, describe(got), newest))
	}
	return d
}
