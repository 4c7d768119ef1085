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

	"github.com/plantstore/plantstore/modules/changes"
)

// FileName is the store's file inside the data dir.
const FileName = "plants.db"

// lockTimeout is how long Open waits for the file lock another process
// holds. A running store never releases it, so waiting longer only delays
// the error.
const lockTimeout = 100 * time.Millisecond

// Open opens dir/plants.db, creating dir (mode 0700) and the file as
// needed. Its errors are meant for the operator, each on one line: the data
// dir in use by another process or not writable, a plants.db this process
// may not write, one that is not a plant store, or one a newer build wrote.
// An older file is upgraded first (see migrate.go).
func Open(dir string) (*Store, error) { return OpenConfig(Config{DataDir: dir}) }

// OpenConfig is Open of cfg.DataDir, keeping changes and delivered events
// for cfg.ChangesRetention (zero: for ever).
func OpenConfig(cfg Config) (*Store, error) { return openWith(cfg, migrations) }

// openWith is OpenConfig with a migration list of the caller's, for tests.
func openWith(cfg Config, list []migration) (*Store, error) {
	dir := cfg.DataDir
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
	if err := prepare(db, path, list); err != nil {
		_ = db.Close()
		return nil, err
	}
	history, err := readHistory(db)
	if err != nil {
		_ = db.Close()
		return nil, corrupt(path, err)
	}
	// A process killed in a commit can leave its last pages in the page
	// cache only; one sync puts everything this process reads on disk.
	var txID int
	if err := db.Sync(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt store: cannot sync %s: %w", path, err)
	}
	_ = db.View(func(tx *bolt.Tx) error { txID = tx.ID(); return nil })
	s := &Store{db: db, writes: newCommitter(db, txID), cfg: cfg, history: history, versionFloor: changes.VersionFloor(time.Now())}
	s.outbox = newOutbox(s)
	s.changes = &ChangeLog{store: s}
	return s, nil
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

// prepare brings the file to this build's format: it reads the version the
// file is at, checks that the buckets of that version are there, and applies
// the migrations above it (all of them, to a new file). Reading or writing a
// damaged file can make bbolt panic; that is turned into an error so the
// program stops with one line.
func prepare(db *bolt.DB, path string, list []migration) error {
	latest := list[len(list)-1].version
	var version int
	err := recovered(func() error {
		return db.View(func(tx *bolt.Tx) (err error) {
			if version, err = fileVersion(tx); err != nil {
				return err
			}
			if version > latest {
				return errNewerFormat
			}
			return checkBuckets(tx, list, version)
		})
	})
	switch {
	case errors.Is(err, errNewerFormat):
		return fmt.Errorf("bolt store: %s is at format version %d, newer than this build's %d: "+
			"a newer plantstore wrote it, and downgrading is not supported; run that release or a newer one, "+
			"or restore a backup taken before the upgrade", path, version, latest)
	case err != nil:
		return corrupt(path, err)
	case version == latest:
		return nil
	}
	err = recovered(func() error {
		return db.Update(func(tx *bolt.Tx) error { return migrate(tx, list, version) })
	})
	switch {
	case err != nil && version == 0:
		return fmt.Errorf("bolt store: cannot initialize %s: %w", path, err)
	case err != nil:
		return fmt.Errorf("bolt store: cannot upgrade %s from format version %d to %d: %w", path, version, latest, err)
	}
	return nil
}

// recovered runs f, turning a panic into an error.
func recovered(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading it panicked: %v", r)
		}
	}()
	return f()
}
