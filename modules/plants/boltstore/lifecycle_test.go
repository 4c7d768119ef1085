package boltstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestOpenBuildsStartStarts: Open spawns nothing; Start (the program's
// OnStart hook) spawns the committer, once, and Close waits for it.
func TestOpenBuildsStartStarts(t *testing.T) {
	// The store counts what it spawns: runtime.NumGoroutine would also
	// count other tests' goroutines coming and going.
	s, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if n := boltstore.Spawned(s); n != 0 {
		t.Fatalf("Open started %d goroutines, want none before Start", n)
	}
	for range 2 {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := boltstore.Spawned(s); n != 1 {
		t.Fatalf("Start twice started %d goroutines, want 1 (the committer)", n)
	}
	// A write goes through the committer (Delete: Create's result is
	// changing under another seam).
	if err := s.Delete(context.Background(), 1); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Delete = %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStoreWithoutStartStillWrites: a store used without Fx needs no
// Start: Close without any write returns, and a first write starts the
// committer itself.
func TestStoreWithoutStartStillWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := boltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // never started
		t.Fatal(err)
	}
	s, err = boltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Delete(context.Background(), 1); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Delete without Start = %v, want ErrNotFound", err)
	}
}
