package boltstore

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Check verifies the file's structure (every page reachable once, none both
// used and free) and that the tag index and the plants agree. It reads the
// whole file: for tests and offline checks, not for the request path.
func (s *Store) Check() error {
	return s.db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("boltstore: file check: %w", errors.Join(errs...))
		}
		return checkIndex(tx)
	})
}

// checkIndex verifies that every tagged plant has its index entry, every
// value decodes, and the index holds nothing else.
func checkIndex(tx *bolt.Tx) error {
	tags := tx.Bucket(tagsBucket)
	tagged := 0
	err := tx.Bucket(plantsBucket).ForEach(func(k, v []byte) error {
		p, err := decodePlant(k, v)
		if err != nil {
			return err
		}
		if p.Tag != nil {
			tagged++
			// An index value is empty, so look for the key, not the value.
			want := indexKey(tagDigest(*p.Tag), p.ID)
			if k, _ := tags.Cursor().Seek(want); !bytes.Equal(k, want) {
				return fmt.Errorf("boltstore: plant %d is missing from the tag index", p.ID)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n := tags.Stats().KeyN; n != tagged {
		return fmt.Errorf("boltstore: tag index has %d entries for %d tagged plants", n, tagged)
	}
	return nil
}
