package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the store's file inside the data dir.
const FileName = "plants.db"

// lockTimeout is how long Open waits for the file lock another process
// holds. A running store never releases it, so waiting longer only delays
// the error.
const lockTimeout = 100 * time.Millisecond

// formatVersion is the layout of buckets, keys and values described in
// codec.go; Open refuses a file written in another layout.
const formatVersion = "1"

// Open opens dir/plants.db, creating dir (mode 0700) and the file as
// needed. Its errors are meant for the operator, each on one line: the data
// dir in use by another process or not writable, a plants.db this process
// may not write, or one that is not a plant store.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bolt store: cannot create data dir %q: %w", dir, unwrapPath(err))
	}
	path := filepath.Join(dir, FileName)
	db, err := openBolt(path)
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("bolt store: data dir %q is in use by another plantstore process (%s is locked)", dir, FileName)
	case errors.Is(err, fs.ErrPermission):
		return nil, permissionError(dir, path, err)
	case isPathError(err):
		return nil, fmt.Errorf("bolt store: cannot open %s: %w", path, unwrapPath(err))
	case err != nil:
		return nil, corrupt(path, err)
	}
	if err := prepare(db, path); err != nil {
		_ = db.Close()
		return nil, err
	}
	// A process killed in a commit can leave its last pages in the page
	// cache only; one sync puts everything this process reads on disk.
	var txID int
	if err := db.Sync(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt store: cannot sync %s: %w", path, err)
	}
	_ = db.View(func(tx *bolt.Tx) error { txID = tx.ID(); return nil })
	return &Store{db: db, writes: newCommitter(db, txID)}, nil
}

// openBolt is bolt.Open, with a panic on a damaged file (bbolt panics on
// some, e.g. a bad freelist page) turned into an error. The file handle
// bbolt had opened then leaks; the program is about to stop anyway.
func openBolt(path string) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("reading it panicked: %v", r)
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
}

func corrupt(path string, err error) error {
	return fmt.Errorf("bolt store: %s is not a readable plant store (corrupt, or not a plantstore file): %w; "+
		"move it away to start empty, or restore it from a backup", path, err)
}

// permissionError names what refused the open: a plants.db that exists is
// the file itself (read-only, or another user's), whose mode says which;
// otherwise the data dir, in which it could not be created.
func permissionError(dir, path string, err error) error {
	info, statErr := os.Stat(path)
	if statErr != nil {
		return fmt.Errorf("bolt store: data dir %q is not writable: %w", dir, unwrapPath(err))
	}
	return fmt.Errorf("bolt store: %s is not writable by this process (mode %v): %w", path, info.Mode().Perm(), unwrapPath(err))
}

func isPathError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}

// unwrapPath drops the path from an *fs.PathError: messages name the dir
// or file themselves, once.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// prepare checks the layout of an existing file and creates the buckets
// in a new one. Reading a damaged file can make bbolt panic; that is
// turned into an error so the program stops with one line.
func prepare(db *bolt.DB, path string) (err error) {
	fresh := false
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("reading it panicked: %v", r)
			}
		}()
		return db.View(func(tx *bolt.Tx) error {
			meta := tx.Bucket(metaBucket)
			if meta == nil {
				if k, _ := tx.Cursor().First(); k != nil {
					return errors.New("it holds buckets but no plantstore format version")
				}
				fresh = true
				return nil
			}
			if v := meta.Get(formatKey); string(v) != formatVersion {
				return fmt.Errorf("format version %q, this build reads %q", v, formatVersion)
			}
			if tx.Bucket(plantsBucket) == nil || tx.Bucket(tagsBucket) == nil {
				return errors.New("buckets are missing")
			}
			return nil
		})
	}()
	if err != nil {
		return corrupt(path, err)
	}
	if !fresh {
		return nil
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{metaBucket, plantsBucket, tagsBucket} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(metaBucket).Put(formatKey, []byte(formatVersion))
	})
	if err != nil {
		return fmt.Errorf("bolt store: cannot initialize %s: %w", path, err)
	}
	return nil
}
