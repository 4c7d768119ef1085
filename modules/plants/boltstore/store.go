// Package boltstore is the embedded plant.Store: one bbolt file, plants.db,
// in the data dir. Every write is on disk (fsync) before it returns, and
// concurrent writes share a commit (see commit.go). Plants are keyed by id
// in an order-preserving encoding, so a page is a seek and a short scan
// wherever it starts, and a tag index keeps filtered pages as cheap.
package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/plantstore/plantstore/modules/plants/plant"
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

var (
	plantsBucket = []byte("plants")
	tagsBucket   = []byte("plants_by_tag")
	metaBucket   = []byte("meta")
	formatKey    = []byte("format")
)

// Store is the bbolt plant.Store. It is safe for concurrent use.
type Store struct {
	db     *bolt.DB
	writes *committer
}

// Open opens dir/plants.db, creating dir (mode 0700) and the file as
// needed. Its errors are meant for the operator, each on one line: the data
// dir in use by another process, not writable, or holding a file that is
// not a plant store.
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
		return nil, fmt.Errorf("bolt store: data dir %q is not writable: %w", dir, unwrapPath(err))
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

// Create implements plant.Store. It returns once the plant is on disk.
//
// A create of an id already on disk (a client's retry, most often) is
// answered from a read: identical is success, different a conflict. It
// needs no commit, so retries cost neither an fsync nor a place in a batch.
func (s *Store) Create(ctx context.Context, p plant.Plant) error {
	key, value, index := encode(p)
	if settled, err := s.settledOnDisk(key[:], value); settled {
		return err
	}
	return s.writes.do(ctx, func(tx *bolt.Tx) error { return create(tx, key[:], value, index) })
}

// settledOnDisk answers a create from what is on disk, when a plant is
// stored under key there.
func (s *Store) settledOnDisk(key, value []byte) (settled bool, err error) {
	viewErr := s.db.View(func(tx *bolt.Tx) error {
		old := tx.Bucket(plantsBucket).Get(key)
		if old == nil || !s.writes.onDisk(tx) {
			return nil
		}
		settled = true
		if !bytes.Equal(old, value) {
			err = plant.ErrConflict
		}
		return nil
	})
	if viewErr != nil { // the write path meets the same failure and reports it
		return false, nil
	}
	return settled, err
}

// encode returns p's key, value and tag index key (nil without a tag).
func encode(p plant.Plant) (key [keyLen]byte, value, index []byte) {
	key = plantKey(p.ID)
	value = appendValue(make([]byte, 0, valueLen(p)), p)
	if p.Tag != nil {
		index = indexKey(tagDigest(*p.Tag), p.ID)
	}
	return key, value, index
}

// create stores a plant under key with value and, when it has a tag, its
// tag index key, unless an identical plant is stored already.
func create(tx *bolt.Tx, key, value, index []byte) error {
	plants := tx.Bucket(plantsBucket)
	if old := plants.Get(key); old != nil {
		if bytes.Equal(old, value) { // canonical encoding: equal bytes, equal plants
			return nil
		}
		return plant.ErrConflict
	}
	if err := plants.Put(key, value); err != nil {
		return err
	}
	if index != nil {
		return tx.Bucket(tagsBucket).Put(index, []byte{})
	}
	return nil
}

// Delete implements plant.Store. It returns once the deletion is on disk.
func (s *Store) Delete(ctx context.Context, id int64) error {
	key := plantKey(id)
	return s.writes.do(ctx, func(tx *bolt.Tx) error {
		plants := tx.Bucket(plantsBucket)
		old := plants.Get(key[:])
		if old == nil {
			return plant.ErrNotFound
		}
		p, err := decodePlant(key[:], old)
		if err != nil {
			return err
		}
		if p.Tag != nil {
			if err := tx.Bucket(tagsBucket).Delete(indexKey(tagDigest(*p.Tag), id)); err != nil {
				return err
			}
		}
		return plants.Delete(key[:])
	})
}

// Get implements plant.Store.
func (s *Store) Get(ctx context.Context, id int64) (plant.Plant, error) {
	if err := ctx.Err(); err != nil {
		return plant.Plant{}, err
	}
	var p plant.Plant
	err := s.db.View(func(tx *bolt.Tx) error {
		key := plantKey(id)
		v := tx.Bucket(plantsBucket).Get(key[:])
		if v == nil {
			return plant.ErrNotFound
		}
		var err error
		p, err = decodePlant(key[:], v)
		return err
	})
	return p, err
}

// List implements plant.Store: a seek to the cursor, then a scan of at most
// q.Limit plants, in the plants bucket or, with a tag, in the tag index.
func (s *Store) List(ctx context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return nil, fmt.Errorf("boltstore: list limit %d is not positive", q.Limit)
	}
	out := make([]plant.Plant, 0, min(q.Limit, 128))
	err := s.db.View(func(tx *bolt.Tx) error {
		if q.Tag == nil {
			return listAll(tx, q, &out)
		}
		return listTag(tx, q, &out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func listAll(tx *bolt.Tx, q plant.ListQuery, out *[]plant.Plant) error {
	c := tx.Bucket(plantsBucket).Cursor()
	k, v := c.First()
	if q.After != nil {
		after := plantKey(*q.After)
		if k, v = c.Seek(after[:]); bytes.Equal(k, after[:]) {
			k, v = c.Next()
		}
	}
	for ; k != nil && len(*out) < q.Limit; k, v = c.Next() {
		p, err := decodePlant(k, v)
		if err != nil {
			return err
		}
		*out = append(*out, p)
	}
	return nil
}

func listTag(tx *bolt.Tx, q plant.ListQuery, out *[]plant.Plant) error {
	// One cursor for the lookups: Bucket.Get would allocate one per plant.
	plants := tx.Bucket(plantsBucket).Cursor()
	digest := tagDigest(*q.Tag)
	c := tx.Bucket(tagsBucket).Cursor()
	k, _ := c.Seek(digest[:])
	if q.After != nil {
		after := indexKey(digest, *q.After)
		if k, _ = c.Seek(after); bytes.Equal(k, after) {
			k, _ = c.Next()
		}
	}
	for ; bytes.HasPrefix(k, digest[:]) && len(*out) < q.Limit; k, _ = c.Next() {
		key := k[digestLen:]
		pk, v := plants.Seek(key)
		if !bytes.Equal(pk, key) {
			id, _ := plantID(key)
			return fmt.Errorf("boltstore: tag index names plant %d, which is not stored", id)
		}
		p, err := decodePlant(key, v)
		if err != nil {
			return err
		}
		if p.Tag != nil && *p.Tag == *q.Tag { // a digest collision is skipped
			*out = append(*out, p)
		}
	}
	return nil
}

// Ping implements plant.Store: the file is open and readable.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(plantsBucket) == nil {
			return errors.New("boltstore: plants bucket is missing")
		}
		return nil
	})
}

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

// Close commits the writes already queued and closes the file.
func (s *Store) Close() error {
	s.writes.close()
	return s.db.Close()
}
