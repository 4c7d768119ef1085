package boltstore

import (
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// The file's history, as pgstore keeps the database's: numbered migrations,
// applied in order, each once. The meta bucket records the version the file
// is at (formatKey, a decimal number); Open applies the migrations above it
// in one read-write transaction, so an upgrade that fails leaves the file as
// it was. Open holds the file's lock (bbolt's flock) by then, so no other
// process reads a half-upgraded file or upgrades it at the same time. A
// released migration is never edited; a change is a new one. A file at a
// version above the last one here was written by a newer build and is
// refused: a downgrade would have to undo what this build does not know.
type migration struct {
	version int
	name    string
	// creates lists the buckets the migration makes; Open creates them
	// before apply runs, and a file at or above version must hold them.
	creates [][]byte
	// apply changes the data, when the migration does more than add
	// buckets; nil when it does not.
	apply func(tx *bolt.Tx) error
}

// migrations is the file's history. Version 1 is the layout of the first
// release, which recorded formatKey "1" without a migration list.
var migrations = []migration{
	{version: 1, name: "plants and their tag index", creates: [][]byte{plantsBucket, tagsBucket}},
	{version: 2, name: "the webhook outbox and its dead letters", creates: [][]byte{outboxBucket, deadLetterBucket}},
	{version: 3, name: "the change log and the delivered webhook events", creates: [][]byte{changesBucket, deliveredBucket}},
	{version: 4, name: "the store's history id", apply: newHistory},
	{version: 5, name: "the webhook endpoints made through the API", creates: [][]byte{endpointsBucket}},
	{version: 6, name: "the record of webhook attempts", creates: [][]byte{attemptsBucket, attemptsByMessageBucket}},
}

// errNewerFormat marks a file written by a newer build.
var errNewerFormat = errors.New("newer format")

// fileVersion reads the version a file is at: 0 for a new, empty file.
func fileVersion(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		if k, _ := tx.Cursor().First(); k != nil {
			return 0, errors.New("it holds buckets but no plantstore format version")
		}
		return 0, nil
	}
	v := meta.Get(formatKey)
	version, err := strconv.Atoi(string(v))
	if err != nil || version < 1 {
		return 0, fmt.Errorf("format version %q is not a version", v)
	}
	return version, nil
}

// checkBuckets reports damage: a bucket that a migration up to version
// made and that is gone.
func checkBuckets(tx *bolt.Tx, list []migration, version int) error {
	var missing []string
	for _, m := range list {
		if m.version > version {
			break
		}
		for _, b := range m.creates {
			if tx.Bucket(b) == nil {
				missing = append(missing, string(b))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("buckets are missing: %q", missing)
	}
	return nil
}

// migrate applies the migrations of list above the file's version, in one
// transaction, and records the last one's version. from is the version
// Open read before; the lock keeps it current.
func migrate(tx *bolt.Tx, list []migration, from int) error {
	meta, err := tx.CreateBucketIfNotExists(metaBucket)
	if err != nil {
		return err
	}
	for _, m := range list {
		if m.version <= from {
			continue
		}
		if err := applyMigration(tx, m); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return meta.Put(formatKey, []byte(strconv.Itoa(list[len(list)-1].version)))
}

func applyMigration(tx *bolt.Tx, m migration) error {
	for _, b := range m.creates {
		if _, err := tx.CreateBucket(b); err != nil {
			return fmt.Errorf("create bucket %q: %w", b, err)
		}
	}
	if m.apply == nil {
		return nil
	}
	return m.apply(tx)
}
