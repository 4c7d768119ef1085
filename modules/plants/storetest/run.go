package storetest

import (
	"testing"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/changes/changestest"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/outbox/outboxtest"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Supports is what a kind of store declares it supports beyond
// plant.Store: Run runs the suite of each.
type Supports struct {
	// Outbox: the store keeps a webhook outbox, written in the commits of
	// the changes it announces (Store.Outbox; outboxtest.Run).
	Outbox bool
	// ChangeLog: the store logs every change it commits (Store.Changes;
	// changestest.Run).
	ChangeLog bool
	// Durable: what the store acknowledged is there after it is closed
	// and opened again on the same storage (Subject.Storage).
	Durable bool
	// Batches: the store creates many plants in one commit
	// (plant.BatchCreator), the bulk import's path.
	Batches bool
}

// Store is one store under test, new and empty, started: its plants and,
// as its kind supports them, its outbox (before its first write) and its
// change log, all the same store's.
type Store struct {
	Plants  plant.Store
	Outbox  outbox.Store
	Changes changes.ChangeLog
}

// Subject is a kind of store under test.
type Subject struct {
	Supports Supports
	// Open returns a new, empty, started store for one subtest; the
	// caller closes it when the subtest ends (t.Cleanup).
	Open func(t *testing.T) Store
	// Storage, for a Durable store, makes empty storage for one subtest and
	// returns how to open a started store on it: each call of open returns
	// a new store on that same storage, which the suite closes.
	Storage func(t *testing.T) (open func(t *testing.T) plant.Store)
}

// Run runs every suite the subject supports: the plant cases, each a
// subtest of t run in parallel, and the ChangeLog, Outbox and Durable
// suites, each a subtest of t holding its cases.
func Run(t *testing.T, s Subject) {
	t.Helper()
	if s.Supports.ChangeLog {
		t.Run("ChangeLog", func(t *testing.T) {
			changestest.Run(t, func(t *testing.T) changestest.Subject {
				st := s.Open(t)
				if st.Changes == nil {
					t.Fatal("the store declares a change log, and has none")
				}
				return changestest.Subject{Plants: st.Plants, Changes: st.Changes}
			})
		})
	}
	if s.Supports.Outbox {
		t.Run("Outbox", func(t *testing.T) {
			outboxtest.Run(t, func(t *testing.T) outboxtest.Subject {
				st := s.Open(t)
				if st.Outbox == nil {
					t.Fatal("the store declares an outbox, and has none")
				}
				return outboxtest.Subject{Plants: st.Plants, Outbox: st.Outbox, Changes: st.Changes}
			})
		})
	}
	if s.Supports.Durable {
		t.Run("Durable", func(t *testing.T) {
			if s.Storage == nil {
				t.Fatal("the store declares itself durable, and gives no Storage")
			}
			runDurable(t, s.Storage)
		})
	}
	if s.Supports.Batches {
		t.Run("Batch", func(t *testing.T) { runBatch(t, s.Open) })
	}
	runPlants(t, func(t *testing.T) plant.Store { return s.Open(t).Plants })
}
