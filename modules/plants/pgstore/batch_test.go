package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Creates that queue while both lanes are busy share one statement; each
// caller still gets its own outcome, a repeated id included. The lanes are
// held busy by a transaction of the test's that locks the rows they insert,
// so nothing depends on timing.
func TestQueuedCreatesShareAStatement(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := openStore(t, Config{URL: url})
	blocker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO plants (id, name) VALUES (1, 'held'), (2, 'held')`); err != nil {
		t.Fatal(err)
	}

	outcome := func(p plant.Plant) <-chan error {
		ch := make(chan error, 1)
		go func() { ch <- s.Create(ctx, p) }()
		return ch
	}
	// Both lanes wait on the test's row locks.
	lane1, lane2 := outcome(plant.Plant{ID: 1, Name: "one"}), outcome(plant.Plant{ID: 2, Name: "two"})
	waitFor(t, "both lanes blocked", func() bool { return blockedOnLocks(t, url) == 2 })

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
	outcomes := make([]<-chan error, len(queued))
	for i, q := range queued {
		outcomes[i] = outcome(q.p)
		waitFor(t, "the create queued", func() bool { return s.creates.queue.Len() == i+1 })
	}
	if err := tx.Rollback(ctx); err != nil { // frees the lanes
		t.Fatal(err)
	}

	for name, ch := range map[string]<-chan error{"lane 1": lane1, "lane 2": lane2} {
		if err := <-ch; err != nil {
			t.Errorf("%s's create: %v", name, err)
		}
	}
	for i, q := range queued {
		if err := <-outcomes[i]; !errors.Is(err, q.want) {
			t.Errorf("create %d (%+v): %v, want %v", i, q.p, err, q.want)
		}
	}
	// Five queued creates of three ids: one statement takes the three ids,
	// and the repeats of id 10 follow, each alone or (when the other lane
	// took one) two at most; never a statement per create.
	if n := s.creates.statements.Load(); n < 1 || n > 2 {
		t.Errorf("%d multi-row statements for five queued creates, want 1 or 2", n)
	}
	for _, want := range []plant.Plant{
		{ID: 1, Name: "one"}, {ID: 2, Name: "two"}, queued[0].p, queued[1].p, queued[4].p,
	} {
		got, err := s.Get(ctx, want.ID)
		if err != nil || !got.Equal(want) {
			t.Errorf("Get(%d) = %+v, %v; want %+v", want.ID, got, err, want)
		}
	}
}

// blockedOnLocks counts the store's sessions waiting for a lock.
func blockedOnLocks(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE application_name = 'plantstore' AND wait_event_type = 'Lock'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
