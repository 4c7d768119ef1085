package outbox

import (
	"time"

	"github.com/plantstore/plantstore/modules/changes"
)

// Planner is what a store asks in every commit that changes plants (the
// webhooks' Dispatcher is the program's): it is told of the changes the
// commit makes, inside that commit (a bolt transaction, a postgres
// statement), and gives the rows to write with them, so that a change is
// never committed without its events nor an event without its change.
// claims says whether the store writes a Leased row as its writer's claim;
// a store that does not ignores Leased, and a plan asked without claims
// should lease nothing.
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
type Planner interface {
	Plan(changes []changes.Change, claims bool) (rows []Row, written func(committed map[int64]changes.Committed, err error))
}

// PlanFunc is a function as a Planner, for a test's plan.
type PlanFunc func(changes []changes.Change, claims bool) (rows []Row, written func(committed map[int64]changes.Committed, err error))

// Plan implements Planner: it calls f.
func (f PlanFunc) Plan(changes []changes.Change, claims bool) ([]Row, func(map[int64]changes.Committed, error)) {
	return f(changes, claims)
}

// Store is a plant store's outbox: the deliveries, and the hook that
// writes them in the commits of the changes they announce.
type Store interface {
	Outbox
	// OnChange sets the planner asked in every commit that changes plants
	// (changes.Created, Replaced and Deleted alike);
	// lease is how long a row the plan leases stays its writer's claim.
	// Call it before the store's first write (before its Start): the
	// writers read it without a lock.
	OnChange(lease time.Duration, plan Planner)
}
