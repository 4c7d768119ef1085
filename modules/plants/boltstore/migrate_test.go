package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// format1Plants are the plants in testdata/format1.db (see its README).
var format1Plants = []plant.Plant{
	{ID: -42, Name: "Negative Nellie", Tag: plant.StringPtr("fern")},
	{ID: 1, Name: "Monstera deliciosa"},
	{ID: 2, Name: "Boston fern", Tag: plant.StringPtr("fern")},
	{ID: 3, Name: "Cactus", Tag: plant.StringPtr("")},
	{ID: 9223372036854775807, Name: "Ficus – ünïcode 🌿", Tag: plant.StringPtr("tropical")},
}

// format1Dir is a data dir holding a copy of testdata/format1.db.
func format1Dir(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "format1.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rawView reads the closed store in dir with bbolt alone.
func rawView(t *testing.T, dir string, view func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(view); err != nil {
		t.Fatal(err)
	}
}

// fileState is what a closed store's file says about itself: its format
// version and its last transaction, which a commit would advance.
func fileState(t *testing.T, dir string) (format string, txID int) {
	t.Helper()
	rawView(t, dir, func(tx *bolt.Tx) error {
		format, txID = string(tx.Bucket(metaBucket).Get(formatKey)), tx.ID()
		return nil
	})
	return format, txID
}

// expectPlants checks that s holds exactly want, in id order, and that its
// file is consistent, then closes s.
func expectPlants(t *testing.T, s *Store, want []plant.Plant) {
	t.Helper()
	got, err := s.List(context.Background(), plant.ListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plants = %s, want %s", describe(got), describe(want))
	}
	fern, err := s.List(context.Background(), plant.ListQuery{Limit: 100, Tag: plant.StringPtr("fern")})
	if err != nil {
		t.Fatal(err)
	}
	var wantFern []plant.Plant
	for _, p := range want {
		if p.Tag != nil && *p.Tag == "fern" {
			wantFern = append(wantFern, p)
		}
	}
	if !reflect.DeepEqual(fern, wantFern) {
		t.Errorf("plants tagged fern = %s, want %s", describe(fern), describe(wantFern))
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func describe(ps []plant.Plant) string {
	out := ""
	for _, p := range ps {
		tag := "none"
		if p.Tag != nil {
			tag = strconv.Quote(*p.Tag)
		}
		out += fmt.Sprintf("{%d %q %s}", p.ID, p.Name, tag)
	}
	return out
}

// TestMigrationList: versions run 1, 2, 3, ... with no gap and no repeat,
// each migration is named and does something.
func TestMigrationList(t *testing.T) {
	if len(migrations) == 0 {
		t.Fatal("no migrations")
	}
	for i, m := range migrations {
		if m.version != i+1 {
			t.Errorf("migration %d (%s) has version %d, want %d", i, m.name, m.version, i+1)
		}
		if m.name == "" {
			t.Errorf("migration %d has no name", m.version)
		}
		if len(m.creates) == 0 && m.apply == nil {
			t.Errorf("migration %d (%s) does nothing", m.version, m.name)
		}
	}
}

// TestUpgradeFromFormat1: a file written before migrations existed opens
// with every plant as it was, is at this build's version, and a second
// Open commits nothing.
func TestUpgradeFromFormat1(t *testing.T) {
	dir := format1Dir(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	expectPlants(t, s, format1Plants)
	format, txID := fileState(t, dir)
	if want := strconv.Itoa(migrations[len(migrations)-1].version); format != want {
		t.Errorf("format after Open = %q, want %q", format, want)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatalf("second Open = %v", err)
	}
	expectPlants(t, s, format1Plants)
	if _, again := fileState(t, dir); again != txID {
		t.Errorf("second Open committed: transaction %d, then %d", txID, again)
	}
}

// withOutbox is this build's list and a later migration, as a release
// adding a bucket will have: it makes the bucket and writes into it.
func withOutbox(runs *int, fail error) []migration {
	return append(migrations[:len(migrations):len(migrations)], migration{
		version: migrations[len(migrations)-1].version + 1,
		name:    "an outbox",
		creates: [][]byte{[]byte("outbox")},
		apply: func(tx *bolt.Tx) error {
			*runs++
			if err := tx.Bucket([]byte("outbox")).Put([]byte("k"), []byte("v")); err != nil {
				return err
			}
			return fail
		},
	})
}

// TestUpgradeAppliesPendingMigrationsOnce opens the fixture with a list one
// migration longer than this build's: it runs once, on the first Open, and
// the plants are untouched. The file is then too new for this build.
func TestUpgradeAppliesPendingMigrationsOnce(t *testing.T) {
	dir := format1Dir(t)
	runs := 0
	list := withOutbox(&runs, nil)
	latest := list[len(list)-1].version
	s, err := openWith(Config{DataDir: dir}, list)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	expectPlants(t, s, format1Plants)
	format, txID := fileState(t, dir)
	if format != strconv.Itoa(latest) || runs != 1 {
		t.Errorf("after Open: format %q, migration ran %d times; want %d, once", format, runs, latest)
	}
	rawView(t, dir, func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("outbox")); b == nil || string(b.Get([]byte("k"))) != "v" {
			t.Error("the migration's bucket or its write is missing")
		}
		return nil
	})

	s, err = openWith(Config{DataDir: dir}, list)
	if err != nil {
		t.Fatalf("second Open = %v", err)
	}
	expectPlants(t, s, format1Plants)
	if _, again := fileState(t, dir); again != txID || runs != 1 {
		t.Errorf("second Open: transaction %d, then %d; migration ran %d times; want no commit, once", txID, again, runs)
	}

	_, err = Open(dir)
	path := filepath.Join(dir, FileName)
	want := fmt.Sprintf("bolt store: %s is at format version %d, newer than this build's %d: "+
		"a newer plantstore wrote it, and downgrading is not supported; run that release or a newer one, "+
		"or restore a backup taken before the upgrade", path, latest, latest-1)
	if err == nil || err.Error() != want {
		t.Errorf("Open by this build = %v, want %q", err, want)
	}
}

// TestFailedMigrationLeavesTheFileAsItWas: a migration that fails rolls the
// whole upgrade back, the error names it, and a later Open with the fixed
// migration upgrades the file.
func TestFailedMigrationLeavesTheFileAsItWas(t *testing.T) {
	dir := format1Dir(t)
	_, txID := fileState(t, dir)
	runs := 0
	list := withOutbox(&runs, errors.New("disk says no"))
	latest := list[len(list)-1].version
	_, err := openWith(Config{DataDir: dir}, list)
	want := fmt.Sprintf("bolt store: cannot upgrade %s from format version 1 to %d: migration %d (an outbox): disk says no",
		filepath.Join(dir, FileName), latest, latest)
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want %q", err, want)
	}
	format, after := fileState(t, dir)
	if format != "1" || after != txID {
		t.Errorf("after the failed upgrade: format %q, transaction %d; want \"1\", %d", format, after, txID)
	}
	rawView(t, dir, func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("outbox")) != nil {
			t.Error("the failed migration's bucket exists")
		}
		return nil
	})
	s, err := openWith(Config{DataDir: dir}, withOutbox(&runs, nil))
	if err != nil {
		t.Fatalf("Open with the fixed migration = %v", err)
	}
	expectPlants(t, s, format1Plants)
}

// TestMissingBucketOfTheFileVersionIsDamage: a bucket that the file's
// version says a migration made, and that is gone, is damage, not a
// migration to run again.
func TestMissingBucketOfTheFileVersionIsDamage(t *testing.T) {
	dir := format1Dir(t)
	runs := 0
	list := withOutbox(&runs, nil)
	s, err := openWith(Config{DataDir: dir}, list)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("outbox")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = openWith(Config{DataDir: dir}, list)
	path := filepath.Join(dir, FileName)
	want := "bolt store: " + path + ` is not a readable plant store (corrupt, or not a plantstore file): buckets are missing: ["outbox"]; ` +
		"move it away to start empty, or restore it from a backup"
	if err == nil || err.Error() != want || runs != 1 {
		t.Fatalf("Open = %v (migration ran %d times), want %q, the migration not run again", err, runs, want)
	}
}
