package boltstore

import (
	"context"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// MustStart starts s, as the program's start hook does: a test that
// writes needs it.
func MustStart(tb testing.TB, s *Store) {
	tb.Helper()
	if err := s.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// Load stores plants in one transaction, the way Create stores each: for
// building large benchmark data sets quickly.
func Load(s *Store, plants []plant.Plant) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, p := range plants {
			key, value, index := encode(p)
			if _, err := create(tx, key[:], value, index); err != nil {
				return err
			}
		}
		return nil
	})
}
