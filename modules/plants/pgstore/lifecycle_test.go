package pgstore

import (
	"errors"
	"reflect"
	"testing"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestNewBuildsStartStarts: New spawns no create lane; Start (the
// program's OnStart hook, after Migrate) spawns them, once, and Close
// waits for them to end.
func TestNewBuildsStartStarts(t *testing.T) {
	t.Parallel()
	s, err := New(Config{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.creates.spawned; n != 0 {
		t.Fatalf("New started %d create lanes, want none before Start", n)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The batcher counts what it spawns: runtime.NumGoroutine would also
	// count pgxpool's and other tests' goroutines coming and going.
	if n, lanes := s.creates.spawned, createLanes(DefaultMaxConns); n != lanes {
		t.Fatalf("Start twice started %d goroutines, want %d (the create lanes)", n, lanes)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStoreWithoutStartStillCreates: a store used without Fx needs no
// Start: its first create starts the lanes, and Close without any create
// returns.
func TestStoreWithoutStartStillCreates(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // never started
		t.Fatal(err)
	}
	s = openStore(t, Config{URL: url}) // Open: New and Migrate, no Start
	createWithoutStart(t, s)
	if got, err := s.Get(ctx, 1); err != nil || got.Name != "a" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if err := s.Delete(ctx, 2); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Delete = %v", err)
	}
}

// createWithoutStart creates plant 1 through s.Create, whatever else than
// the error Create returns (its result is a seam of its own).
func createWithoutStart(t *testing.T, s *Store) {
	t.Helper()
	out := reflect.ValueOf(s.Create).Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(plant.Plant{ID: 1, Name: "a"})})
	if err, _ := out[len(out)-1].Interface().(error); err != nil {
		t.Fatalf("Create without Start: %v", err)
	}
}
