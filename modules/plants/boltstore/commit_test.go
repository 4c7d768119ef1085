package boltstore

import (
	"context"
	"errors"
	"runtime"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/internal/batching"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// These tests stop the committer inside a transaction with a write that
// waits on a gate, queue writes behind it, then open the gate and look at
// how the queued writes were committed. No timing is involved: the tests
// wait for conditions (the committer inside the gate, n writes queued).

var ctx = context.Background()

func openInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	MustStart(t, s)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// async runs f and delivers its error.
// errOf keeps a write's error, for tests about errors only.
func errOf(_ plant.CreateResult, err error) error { return err }

func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// stall makes the committer run a write that blocks until the returned
// release is called; stall returns once the committer is inside it, so
// every write queued from then on waits for the next commit. release
// returns the stalling write's outcome.
func stall(t *testing.T, s *Store) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	done := async(func() error {
		return errOf(s.writes.do(ctx, func(*bolt.Tx) (plant.CreateResult, error) {
			close(entered)
			<-gate
			return 0, nil
		}))
	})
	<-entered
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Fatalf("stalling write = %v", err)
		}
	}
}

// waitQueued waits until n writes wait in the queue.
func waitQueued(s *Store, n int) {
	for s.writes.queue.Len() < n {
		runtime.Gosched()
	}
}

// queueInOrder queues the writes one after another behind a stalled
// commit, so the next batch holds exactly them in this order, and returns
// their outcomes.
func queueInOrder(t *testing.T, s *Store, writes ...func() error) []error {
	t.Helper()
	release := stall(t, s)
	chans := make([]<-chan error, len(writes))
	for i, w := range writes {
		chans[i] = async(w)
		waitQueued(s, i+1)
	}
	release()
	errs := make([]error, len(chans))
	for i, ch := range chans {
		errs[i] = <-ch
	}
	return errs
}

func TestQueuedWritesShareOneCommit(t *testing.T) {
	s := openInternal(t)
	const n = 50
	writes := make([]func() error, n)
	for i := range writes {
		writes[i] = func() error { return errOf(s.Create(ctx, plant.Plant{ID: int64(i), Name: "p"})) }
	}
	for i, err := range queueInOrder(t, s, writes...) {
		if err != nil {
			t.Fatalf("write %d = %v", i, err)
		}
	}
	// One commit for the stalling write, one for the n queued behind it.
	if st := s.Stats(); st.Commits != 2 || st.WritesCommitted != n+1 {
		t.Fatalf("%d writes in %d commits, want %d in 2", st.WritesCommitted, st.Commits, n+1)
	}
}

func TestFailedWriteIsRetriedOutOfTheBatch(t *testing.T) {
	s := openInternal(t)
	boom := errors.New("boom")
	rose := plant.Plant{ID: 7, Name: "rose", Tag: plant.StringPtr("red")}
	errs := queueInOrder(t, s,
		func() error { return errOf(s.Create(ctx, rose)) },
		func() error {
			// A write that changes the transaction, then fails: its change
			// must not survive, and the batch is re-run without it.
			return errOf(s.writes.do(ctx, func(tx *bolt.Tx) (plant.CreateResult, error) {
				if err := tx.Bucket(plantsBucket).Put([]byte("garbage!"), []byte("x")); err != nil {
					return 0, err
				}
				return 0, boom
			}))
		},
		func() error { return errOf(s.Create(ctx, rose)) },                              // identical: nil, though run twice
		func() error { return errOf(s.Create(ctx, plant.Plant{ID: 7, Name: "tulip"})) }, // conflict, though run twice
		func() error { return s.Delete(ctx, 8) },                                        // not found
		func() error { return errOf(s.Create(ctx, plant.Plant{ID: 8, Name: "ivy"})) },   // created after the delete
	)
	want := []error{nil, boom, nil, plant.ErrConflict, plant.ErrNotFound, nil}
	for i := range want {
		if (want[i] == nil && errs[i] != nil) || !errors.Is(errs[i], want[i]) {
			t.Errorf("write %d = %v, want %v", i, errs[i], want[i])
		}
	}
	got, err := s.List(ctx, plant.ListQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Equal(rose) || !got[1].Equal(plant.Plant{ID: 8, Name: "ivy"}) {
		t.Fatalf("stored %+v, want rose and ivy", got)
	}
	if c := s.Stats().Commits; c != 2 {
		t.Fatalf("%d commits, want 2: the stalling write's and the batch's", c)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestCanceledWaitStillCommits(t *testing.T) {
	s := openInternal(t)
	release := stall(t, s)
	cctx, cancel := context.WithCancel(ctx)
	done := async(func() error { return errOf(s.Create(cctx, plant.Plant{ID: 1, Name: "p"})) })
	waitQueued(s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Create = %v, want context.Canceled", err)
	}
	release()
	// The write was queued, so it commits; an identical retry settles it.
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "other"}); !errors.Is(err, plant.ErrConflict) {
		t.Fatalf("conflicting Create = %v, want ErrConflict", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Create(canceled, plant.Plant{ID: 2, Name: "p"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a canceled context = %v", err)
	}
	if _, err := s.Get(ctx, 2); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("a create whose context was canceled before it was queued is stored: %v", err)
	}
}

func TestCloseCommitsQueuedWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	MustStart(t, s)
	release := stall(t, s)
	const n = 20
	results := make([]<-chan error, n)
	for i := range n {
		results[i] = async(func() error { return errOf(s.Create(ctx, plant.Plant{ID: int64(i), Name: "p"})) })
	}
	waitQueued(s, n)
	closed := async(s.Close)
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if err := <-r; err != nil {
			t.Fatalf("write %d = %v", i, err)
		}
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 99, Name: "late"}); !errors.Is(err, batching.ErrClosed) {
		t.Fatalf("Create after Close = %v, want batching.ErrClosed", err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.List(ctx, plant.ListQuery{Limit: 100})
	if err != nil || len(got) != n {
		t.Fatalf("after Close and Open: %d plants, %v; want %d", len(got), err, n)
	}
}

// TestCommitsAreSynced pins the settings the durability promise rests on:
// bbolt fsyncs every commit and every growth of the file.
func TestCommitsAreSynced(t *testing.T) {
	s := openInternal(t)
	if s.db.NoSync || s.db.NoGrowSync {
		t.Fatalf("NoSync = %v, NoGrowSync = %v; want both false", s.db.NoSync, s.db.NoGrowSync)
	}
}

// A create of a plant already on disk is answered without a commit; one
// whose plant is visible but not known to be on disk yet (its commit's last
// fdatasync still running) waits for a commit like any write.
func TestRecreateIsAnsweredFromDiskOnlyWhenDurable(t *testing.T) {
	s := openInternal(t)
	fern := plant.Plant{ID: 7, Name: "fern", Tag: plant.StringPtr("green")}
	if _, err := s.Create(ctx, fern); err != nil {
		t.Fatal(err)
	}
	commits := s.Stats().Commits

	if _, err := s.Create(ctx, fern); err != nil {
		t.Fatalf("identical re-create: %v", err)
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 7, Name: "fern"}); !errors.Is(err, plant.ErrConflict) {
		t.Fatalf("different plant under the id: %v, want ErrConflict", err)
	}
	if after := s.Stats().Commits; after != commits {
		t.Fatalf("re-creates of a plant on disk committed %d transactions, want none", after-commits)
	}

	s.writes.durable.Add(-1) // the last commit's sync has not returned yet
	if _, err := s.Create(ctx, fern); err != nil {
		t.Fatalf("identical re-create before its sync: %v", err)
	}
	if after := s.Stats().Commits; after != commits+1 {
		t.Fatalf("a re-create of a plant not known on disk committed %d transactions, want 1", after-commits)
	}
}
