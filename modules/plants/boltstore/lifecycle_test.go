package boltstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestOpenBuildsStartStarts: Open spawns nothing, so a write before Start
// fails with ErrNotStarted, at once, rather than wait; Start (the
// program's OnStart hook) spawns the committer, once (a second one would
// close the committer's stop channel twice at Close: a panic), and Close
// waits for it.
func TestOpenBuildsStartStarts(t *testing.T) {
	s, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Every write goes through the committer (Delete here: Create's result
	// is changing under another seam).
	if err := s.Delete(context.Background(), 1); !errors.Is(err, boltstore.ErrNotStarted) {
		t.Fatalf("Delete before Start = %v, want ErrNotStarted", err)
	}
	if _, err := s.Get(context.Background(), 1); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get before Start = %v, want ErrNotFound: reads need no Start", err)
	}
	for range 2 {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(context.Background(), 1); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Delete after Start = %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseWithoutStart: a store closed without Start, as a failed start
// leaves it, closes at once and keeps its file.
func TestCloseWithoutStart(t *testing.T) {
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
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), 1); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Delete = %v, want ErrNotFound", err)
	}
}
