package boltstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/plants/storetest"
)

var ctx = context.Background()

func open(t *testing.T, dir string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(dir)
	if err != nil {
		t.Fatalf("Open(%s) = %v", dir, err)
	}
	boltstore.MustStart(t, s)
	return s
}

// checked closes s after checking the file's consistency.
func checked(t *testing.T, s *boltstore.Store) {
	t.Helper()
	if err := s.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// The bolt store supports everything: an outbox, a change log, and what
// it acknowledged survives a reopen.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Subject{
		Supports: storetest.Supports{Outbox: true, ChangeLog: true, Durable: true, Batches: true},
		Open: func(t *testing.T) storetest.Store {
			s := open(t, t.TempDir())
			t.Cleanup(func() { checked(t, s) })
			return storetest.Store{Plants: s, Outbox: s.Outbox(), Changes: s.Changes()}
		},
		Storage: func(t *testing.T) func(*testing.T) plant.Store {
			dir := t.TempDir()
			return func(t *testing.T) plant.Store {
				s := open(t, dir)
				if err := s.Check(); err != nil {
					t.Fatalf("Check after open = %v", err)
				}
				return s
			}
		},
	})
}

func TestOpenCreatesPrivateDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "data")
	s := open(t, dir)
	defer checked(t, s)
	for path, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, filepath.Join(dir, boltstore.FileName): 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, info.Mode(), want)
		}
	}
}

func TestSecondOpenFailsWhileLocked(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer checked(t, s)
	_, err := boltstore.Open(dir)
	want := `bolt store: data dir "` + dir + `" is in use by another plantstore process (plants.db is locked)`
	if err == nil || err.Error() != want {
		t.Fatalf("second Open = %v, want %q", err, want)
	}
	// The first store is unaffected.
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "p"}); err != nil {
		t.Fatalf("Create on the first store = %v", err)
	}
}

func TestOpenAfterCloseSucceeds(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checked(t, open(t, dir))
}

func TestOpenRefusesWhatIsNotAPlantStore(t *testing.T) {
	// storeThen leaves a real, closed plant store at path for a case to damage.
	storeThen := func(t *testing.T, path string) {
		t.Helper()
		if err := open(t, filepath.Dir(path)).Close(); err != nil {
			t.Fatal(err)
		}
	}
	updateRaw := func(t *testing.T, path string, update func(*bolt.Tx) error) {
		t.Helper()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(update); err != nil {
			t.Fatal(err)
		}
	}
	rewrite := func(t *testing.T, path string, edit func([]byte)) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edit(b)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	otherBolt := func(t *testing.T, path string) {
		updateRaw(t, path, func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("plants"))
			return err
		})
	}
	badVersion := func(t *testing.T, path string) {
		storeThen(t, path)
		updateRaw(t, path, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("one"))
		})
	}
	garbage := func(size int) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			b := []byte(strings.Repeat("not a bolt file ", size/16+1))[:size]
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	zeroedMeta := func(t *testing.T, path string) {
		storeThen(t, path)
		rewrite(t, path, func(b []byte) { clear(b[:2*os.Getpagesize()]) }) // both meta pages
	}
	zeroedData := func(t *testing.T, path string) {
		storeThen(t, path)
		rewrite(t, path, func(b []byte) { clear(b[2*os.Getpagesize():]) }) // every page but the meta pages
	}
	missingBucket := func(t *testing.T, path string) {
		storeThen(t, path)
		updateRaw(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("plants_by_tag")) })
	}
	for name, tc := range map[string]struct {
		make func(*testing.T, string)
		want string
	}{
		"zeroed data pages":      {zeroedData, "reading it panicked"},
		"missing bucket":         {missingBucket, `buckets are missing: ["plants_by_tag"]`},
		"text file of 100 bytes": {garbage(100), "invalid database"},
		"text file of 64 KiB":    {garbage(64 << 10), "invalid database"},
		"zeroed meta pages":      {zeroedMeta, "invalid database"},
		"other bolt file":        {otherBolt, "it holds buckets but no plantstore format version"},
		"unreadable version":     {badVersion, `format version "one" is not a version`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, boltstore.FileName)
			tc.make(t, path)
			_, err := boltstore.Open(dir)
			if err == nil {
				t.Fatal("Open = nil, want an error")
			}
			msg := err.Error()
			prefix := "bolt store: " + path + " is not a readable plant store (corrupt, or not a plantstore file): "
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Fatalf("Open = %q, want one line starting %q and naming %q", msg, prefix, tc.want)
			}
		})
	}
}

func TestOpenFailsOnUnusableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dirIsFile := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dirIsFile, boltstore.FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ dir, want string }{
		"under a file":       {filepath.Join(file, "data"), `bolt store: cannot create data dir "` + file + `/data": mkdir: not a directory`},
		"plants.db is a dir": {dirIsFile, "bolt store: cannot open " + dirIsFile + "/plants.db: open: is a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := boltstore.Open(tc.dir); err == nil || err.Error() != tc.want {
				t.Fatalf("Open = %v, want %q", err, tc.want)
			}
		})
	}
}
