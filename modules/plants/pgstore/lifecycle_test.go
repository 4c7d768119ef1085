package pgstore

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestNewBuildsStartStarts: New spawns no create lane, so a create before
// Start fails with errNotStarted, at once, rather than wait for a lane;
// Start (the program's OnStart hook, after Migrate) spawns them, once, and
// Close waits for them to end. Not parallel: the lanes are counted among
// the process's goroutines, and parallel tests wait while it runs.
func TestNewBuildsStartStarts(t *testing.T) {
	s, err := New(Config{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if n := runningLanes(); n != 0 {
		t.Fatalf("New started %d create lanes, want none before Start", n)
	}
	if err := createErr(s, plant.Plant{ID: 1, Name: "a"}); !errors.Is(err, errNotStarted) {
		t.Fatalf("Create before Start = %v, want errNotStarted", err)
	}
	if _, err := s.Get(ctx, 1); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get before Start = %v, want ErrNotFound: reads need no Start", err)
	}
	for range 2 {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A lane shows in the goroutines' stacks once it is scheduled, not as
	// Start returns: wait for as many as one Start makes, then count them
	// all (a second Start's would be there too by then). Not failing on the
	// wait's bound: the count says how many came.
	lanes := createLanes(defaultMaxConns)
	_ = poll.Until(context.Background(), time.Millisecond, 10*time.Second, func() (bool, error) { return runningLanes() >= lanes, nil })
	if n := runningLanes(); n != lanes {
		t.Fatalf("Start twice started %d create lanes, want %d", n, lanes)
	}
	if err := createErr(s, plant.Plant{ID: 1, Name: "a"}); err != nil {
		t.Fatalf("Create after Start: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := runningLanes(); n != 0 {
		t.Fatalf("%d create lanes left after Close", n)
	}
}

// TestCloseWithoutStart: a store closed without Start, as a failed start
// leaves it, closes at once.
func TestCloseWithoutStart(t *testing.T) {
	t.Parallel()
	s, err := New(Config{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// runningLanes counts the goroutines running a create lane.
func runningLanes() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("pgstore.(*batcher).lane("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// createErr creates p through s.Create and returns its error, whatever else
// Create returns (its result is a seam of its own).
func createErr(s *Store, p plant.Plant) error {
	out := reflect.ValueOf(s.Create).Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(p)})
	err, _ := out[len(out)-1].Interface().(error)
	return err
}
