package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// statementCounter counts the multi-row create statements a store sends
// (the create statement, with or without a hook's SQL, holding more than
// one plant), as the server receives them.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, insertCTE) && len(data.Args) > 0 {
		if ids, ok := data.Args[0].([]int64); ok && len(ids) > 1 {
			c.n.Add(1)
		}
	}
	return ctx
}

func (*statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Creates that queue while both lanes are busy share one statement; each
// caller still gets its own outcome, a repeated id included.
func TestQueuedCreatesShareAStatement(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	var statements statementCounter
	s := openStore(t, Config{URL: url, Tracer: &statements})
	queued := []struct {
		p    plant.Plant
		want error
	}{
		{plant.Plant{ID: 10, Name: "fern", Tag: plant.StringPtr("green")}, nil},
		{plant.Plant{ID: 11, Name: "moss"}, nil},
		{plant.Plant{ID: 10, Name: "fern", Tag: plant.StringPtr("green")}, nil}, // identical retry
		{plant.Plant{ID: 10, Name: "ivy"}, plant.ErrConflict},
		{plant.Plant{ID: 12, Name: "palm", Tag: plant.StringPtr("")}, nil},
	}
	plants := make([]plant.Plant, len(queued))
	for i, q := range queued {
		plants[i] = q.p
	}
	for i, err := range createBehindBusyLanes(t, s, url, plants) {
		if !errors.Is(err, queued[i].want) {
			t.Errorf("create %d (%+v): %v, want %v", i, queued[i].p, err, queued[i].want)
		}
	}
	// Five queued creates of three ids: one statement takes the three ids,
	// and the repeats of id 10 follow, each alone or (when the other lane
	// took one) two at most; never a statement per create.
	if n := statements.n.Load(); n < 1 || n > 2 {
		t.Errorf("%d multi-row statements for five queued creates, want 1 or 2", n)
	}
	for _, want := range []plant.Plant{queued[0].p, queued[1].p, queued[4].p} {
		got, err := s.Get(ctx, want.ID)
		if err != nil || !got.Equal(want) {
			t.Errorf("Get(%d) = %+v, %v; want %+v", want.ID, got, err, want)
		}
	}
}

// A statement fails whole; a create that fails it fails alone, and the
// others sharing its statement are stored.
func TestABadCreateFailsAlone(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	var statements statementCounter
	s := openStore(t, Config{URL: url, Tracer: &statements})
	good := []plant.Plant{{ID: 20, Name: "fern"}, {ID: 22, Name: "moss", Tag: plant.StringPtr("green")}}
	bad := plant.Plant{ID: 21, Name: "nul\x00byte"} // PostgreSQL text cannot hold NUL
	errs := createBehindBusyLanes(t, s, url, []plant.Plant{good[0], bad, good[1]})
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("the good creates failed: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil || errors.Is(errs[1], plant.ErrUnavailable) {
		t.Errorf("the bad create: %v, want an error that is not ErrUnavailable", errs[1])
	}
	if n := statements.n.Load(); n != 1 {
		t.Errorf("%d multi-row statements, want the one that failed", n)
	}
	for _, want := range good {
		if got, err := s.Get(ctx, want.ID); err != nil || !got.Equal(want) {
			t.Errorf("Get(%d) = %+v, %v; want %+v", want.ID, got, err, want)
		}
	}
	if _, err := s.Get(ctx, bad.ID); !errors.Is(err, plant.ErrNotFound) {
		t.Errorf("Get(%d) = %v, want ErrNotFound", bad.ID, err)
	}
}

// createBehindBusyLanes holds both create lanes busy, queues a create of
// each plant in order, then frees the lanes and returns the outcomes. Each
// lane is held by a transaction of the test's that locks the row it
// inserts (ids 1 and 2, which they store), and they are let go one at a
// time: the first lane takes every queued create into its next statement
// before the second is free to take any (freed at once, the two could
// split them), so nothing depends on timing.
func createBehindBusyLanes(t *testing.T, s *Store, url string, plants []plant.Plant) []error {
	t.Helper()
	// The lanes must be waiting for creates when the first two arrive, or
	// one lane may take both into one statement: start them now, as the
	// program's OnStart hook does, well before (a store starts them
	// itself on its first create otherwise, too late for this test).
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	holds := make([]pgx.Tx, 2) // holds[i] locks id i+1
	for i := range holds {
		blocker, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer blocker.Close(ctx)
		if holds[i], err = blocker.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := holds[i].Exec(ctx, `INSERT INTO plants (id, name) VALUES ($1, 'held')`, i+1); err != nil {
			t.Fatal(err)
		}
	}
	outcome := func(p plant.Plant) <-chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := s.Create(ctx, p)
			ch <- err
		}()
		return ch
	}
	lanes := []<-chan error{outcome(plant.Plant{ID: 1, Name: "one"}), outcome(plant.Plant{ID: 2, Name: "two"})}
	waitFor(t, "both lanes blocked", func() bool { return blockedOnLocks(t, url) == 2 })
	outcomes := make([]<-chan error, len(plants))
	for i, p := range plants {
		outcomes[i] = outcome(p)
		waitFor(t, "the create queued", func() bool { return s.creates.queue.Len() == i+1 })
	}
	for i, ch := range lanes {
		if err := holds[i].Rollback(ctx); err != nil { // frees the lane
			t.Fatal(err)
		}
		if err := <-ch; err != nil {
			t.Fatalf("lane %d's create: %v", i+1, err)
		}
		if i == 0 {
			waitFor(t, "the first lane to take the queued creates", func() bool { return s.creates.queue.Len() == 0 })
		}
	}
	errs := make([]error, len(plants))
	for i, ch := range outcomes {
		errs[i] = <-ch
	}
	return errs
}

// blockedOnLocks counts the store's sessions waiting for a lock, in the
// test's own database (tests run in parallel).
func blockedOnLocks(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'plantstore' AND wait_event_type = 'Lock'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond every 5 ms for up to 10 s. What it waits for is
// PostgreSQL's doing (locks, commits, a standby's replay) or the store's
// lanes waiting on it, which a synctest bubble cannot wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Wait(t, 5*time.Millisecond, 10*time.Second, what, func() (bool, error) { return cond(), nil })
}

// Two replicas creating the same plants in opposite orders share ids
// between their statements; rows are locked in id order, so they never
// deadlock (PostgreSQL would abort one statement, and every create in it
// would answer 503).
func TestReplicasCreatingTheSameIDsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	replicas := []*Store{openStore(t, Config{URL: url}), openStore(t, Config{URL: url})}
	const clients, ids, rounds = 16, 64, 8
	errs := make(chan error, len(replicas)*clients*ids*rounds)
	var wg sync.WaitGroup
	for r, s := range replicas {
		for c := range clients {
			wg.Go(func() {
				for round := range rounds {
					for i := range int64(ids) {
						id := i
						if (r+c+round)%2 == 1 { // half the clients walk the ids backwards
							id = ids - 1 - i
						}
						if _, err := s.Create(ctx, plant.Plant{ID: id + int64(round)*ids, Name: "same"}); err != nil {
							errs <- err
						}
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("create: %v", err)
	}
}
