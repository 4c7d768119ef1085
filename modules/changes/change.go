// Package changes is the contract of a plant store's changes: what a
// change is (Kind, Change) and what its commit gave it (Committed), as a
// store reports them to its outbox's plan, and the log of every change a
// store keeps (ChangeLog: Cursor, Record), which the change feed follows.
// Each store implements ChangeLog, owning its schema and queries; the suite
// in changestest holds every one of them to the same semantics. The package
// knows no store, no outbox and no feed.
package changes

import (
	"context"
	"time"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Kind is what a change did to a plant.
type Kind uint8

const (
	// Created is a plant stored under a free id (never an identical
	// re-create, which changes nothing).
	Created Kind = iota + 1
	// Replaced is a plant's content changed by a PUT (plant.Store's
	// Replace; never a PUT of the content it has, which changes nothing).
	// Its event type says "updated", the name receivers subscribe to.
	Replaced
	// Deleted is a plant removed (never a DELETE of a missing plant).
	Deleted
)

// String is the kind's event type, as an envelope's "type" and a
// subscription name it.
func (k Kind) String() string {
	switch k {
	case Created:
		return "plant.created"
	case Replaced:
		return "plant.updated"
	case Deleted:
		return "plant.deleted"
	}
	return "plant.unknown"
}

// Kinds lists every kind, in the order of their values, which run from 1
// without a gap (the dispatcher indexes its subscriptions by them).
var Kinds = []Kind{Created, Replaced, Deleted}

// TimestampLayout is how a commit's time (Committed.At) is written wherever
// a change is shown, in a webhook's envelope and in the change feed: RFC
// 3339 in UTC with exactly three fractional digits (milliseconds, trailing
// zeros kept), so that every timestamp has one length and they sort as
// text.
const TimestampLayout = "2006-01-02T15:04:05.000Z07:00"

// Committed is what a store assigned to one change in its commit.
type Committed struct {
	// Version increases with every change of the store (a sequence shared
	// by all plants, and by every replica of a postgres store): of two
	// changes of one plant, the later has the greater version. It is not
	// contiguous: a receiver compares versions, it does not count them.
	Version int64
	// At is the commit's time, by the store's clock (the database's on
	// postgres): an event's timestamp.
	At time.Time
}

// Change is one plant's change, as a store commits it.
type Change struct {
	// Ctx is the context of the request that made the change, for what the
	// event records of it (its trace parent); a shared commit runs in
	// another request's context.
	Ctx  context.Context
	Kind Kind
	// Before is the plant as it was (zero for Created), After as it is
	// (zero for Deleted). A store that does not read the plant it deletes
	// or replaces gives Before's ID only.
	Before, After plant.Plant
}

// Plant is the id of the changed plant.
func (c Change) Plant() int64 {
	if c.Kind == Deleted {
		return c.Before.ID
	}
	return c.After.ID
}
