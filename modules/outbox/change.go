package outbox

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
	// Replaced is a plant's content changed by a PUT (never a PUT of the
	// content it has, which changes nothing).
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

// Kinds lists every kind, in the order of their values.
var Kinds = []Kind{Created, Replaced, Deleted}

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

// Plan is a store's hook: it is told of the changes a commit makes, inside
// that commit (a bolt transaction, a postgres statement), and gives the rows
// to write with them, so that a change is never committed without its
// events nor an event without its change. claims says whether the store
// writes a Leased row as its writer's claim; a store that does not ignores
// Leased, and a plan asked without claims should lease nothing.
//
// written, unless nil, is told how the commit ended, by a store that claims
// only: the plants whose changes it committed (by id, with the version and
// time the commit gave each), or an error, after which it may or may not
// have committed. A row whose change was not committed (an identical
// re-create, a conflict) is not written. A commit holds at most one change
// per plant when the store claims.
//
// Like every write, a commit may be run again (a shared commit's retry
// after another change's failure): the plan is then asked again, and it
// must not assume it is asked once per change.
type Plan func(changes []Change, claims bool) (rows []Row, written func(committed map[int64]Committed, err error))

// Store is a plant store's outbox: the deliveries, and the hook that
// writes them in the commits of the changes they announce.
type Store interface {
	Outbox
	// OnChange sets the plan asked in every commit that changes plants
	// (Created, Replaced and Deleted alike);
	// lease is how long a row the plan leases stays its writer's claim.
	// Call it before the store's first write (before its Start): the
	// writers read it without a lock.
	OnChange(lease time.Duration, plan Plan)
}
