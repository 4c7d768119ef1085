package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/changes"
)

// The file's history (see changes/history.go). The meta bucket's historyKey
// holds the store's id, 8 bytes big-endian, made by migration 4 and kept
// in every copy of the file. Versions, the change log's sequence, go on at
// each open from the wall clock's microseconds when that is past them (see
// logChange): a copy restored from a backup then never gives a version,
// nor a cursor, that the changes made after the backup (which it does not
// hold) were given.
var historyKey = []byte("history")

// newHistory is migration 4: the file's history id.
func newHistory(tx *bolt.Tx) error {
	return tx.Bucket(metaBucket).Put(historyKey, binary.BigEndian.AppendUint64(nil, changes.NewHistoryID()))
}

// readHistory reads the file's history id.
func readHistory(db *bolt.DB) (uint64, error) {
	var id uint64
	err := recovered(func() error {
		return db.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(metaBucket).Get(historyKey)
			if len(v) != 8 {
				return fmt.Errorf("its history id is %d bytes, not 8", len(v))
			}
			id = binary.BigEndian.Uint64(v)
			return nil
		})
	})
	return id, err
}

// History is the store's history id, which its cursors carry.
func (s *Store) History() uint64 { return s.history }

// checkCursor checks a follower's cursor (changes.CheckCursor) in tx: the
// log holds a record at after when one is keyed by its version.
func (s *Store) checkCursor(tx *bolt.Tx, after changes.Cursor, pruned int64) error {
	return changes.CheckCursor(after, s.history, changes.Cursor{Version: pruned}, func() (bool, error) {
		if after.Tx != 0 {
			return false, nil
		}
		key := versionKey(after.Version)
		k, _ := tx.Bucket(changesBucket).Cursor().Seek(key)
		return bytes.Equal(k, key), nil
	})
}
