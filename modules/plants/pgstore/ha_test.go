package pgstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The tests of this file run a primary with a synchronous standby
// (pgtest.NewPair), the production shape of docs/reliability.md's
// "Replication": a 200 must mean the plant is on the standby too.
//
// They are not parallel, though each pair is the test's own: they race
// deadlines of a fraction of a second against the store's (a queued create
// must still be queued at its 300 ms deadline, before the lanes' callers
// leave at theirs and free the lanes), which the load of other tests
// running alongside could reorder, and each starts two servers and takes a
// base backup, which would be that load. -short skips them.

const haDB = "plants"

// openHA opens a store on both servers of pair (a multi-host URL with
// target_session_attrs=read-write), with a call deadline of two seconds.
func openHA(t *testing.T, pair *pgtest.Pair) *Store {
	t.Helper()
	return openStore(t, Config{
		URL:              pair.MultiHostURL(haDB),
		ConnectTimeout:   time.Second,
		StatementTimeout: time.Second,
	})
}

// waitingForStandby counts the primary's sessions whose commit waits for
// the standby.
func waitingForStandby(t *testing.T, pair *pgtest.Pair) int64 {
	t.Helper()
	n, err := pair.Primary.QueryInt(haDB, `SELECT count(*) FROM pg_stat_activity
WHERE application_name = 'plantstore' AND wait_event = 'SyncRep'`)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// onStandby counts the rows of plant id the standby has replayed.
func onStandby(t *testing.T, pair *pgtest.Pair, id int64) int64 {
	t.Helper()
	n, err := pair.Standby.QueryInt(haDB, `SELECT count(*) FROM plants WHERE id = $1`, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// createAsync creates p in a goroutine and returns its outcome's channel.
func createAsync(ctx context.Context, s *Store, p plant.Plant) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := s.Create(ctx, p)
		ch <- err
	}()
	return ch
}

// (a) While the standby stalls, a create answers 503 at its deadline and
// its plant is nowhere to be read: not by a GET, not by an identical
// retry. Once the standby resumes the plant is stored, on both servers.
func TestStalledStandby(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openHA(t, pair)
	p := plant.Plant{ID: 1, Name: "fern"}

	pair.StallStandby(t)
	if _, err := s.Create(ctx, p); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Create with a stalled standby = %v, want ErrUnavailable (503)", err)
	}
	if n := waitingForStandby(t, pair); n != 1 {
		t.Fatalf("%d commits wait for the standby after the create's deadline, want 1: it was canceled", n)
	}
	if got := s.Stats(); got.OutlivedCommits != 1 || got.OrphanedCommits != 1 || got.UnreplicatedCommits != 0 {
		t.Fatalf("Stats while the create's commit waits = %+v, want 1 outlived, 1 orphaned, 0 unreplicated", got)
	}
	// A read cannot tell whether what it sees is on the standby: it waits
	// for it, and answers 503 at its deadline, not a 404 or a 200.
	if _, err := s.Get(ctx, p.ID); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Get while the standby stalls = %v, want ErrUnavailable (503)", err)
	}
	if result, err := s.Create(ctx, p); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("identical retry while the standby stalls = %v, %v, want ErrUnavailable (503)", result, err)
	}

	pair.ResumeStandby(t)
	waitFor(t, "the creates' commits", func() bool { return s.Stats().OrphanedCommits == 0 })
	got, err := s.Get(ctx, p.ID)
	if err != nil || !got.Equal(p) {
		t.Fatalf("Get after the standby resumed = %+v, %v, want %+v", got, err, p)
	}
	if result, err := s.Create(ctx, p); result != plant.Unchanged || err != nil {
		t.Fatalf("identical retry after the standby resumed = %v, %v, want Unchanged", result, err)
	}
	waitFor(t, "the plant on the standby", func() bool { return onStandby(t, pair, p.ID) == 1 })
}

// cancelWaitingCommits cancels, as an operator would, every plantstore
// session whose commit waits for the standby, once there are n.
func cancelWaitingCommits(t *testing.T, pair *pgtest.Pair, n int64) {
	t.Helper()
	waitFor(t, "commits waiting for the standby", func() bool { return waitingForStandby(t, pair) == n })
	canceled, err := pair.Primary.QueryInt(haDB, `SELECT count(*) FROM (SELECT pg_cancel_backend(pid) FROM pg_stat_activity
WHERE application_name = 'plantstore' AND wait_event = 'SyncRep') c`)
	if err != nil || canceled != n {
		t.Fatalf("pg_cancel_backend: %d, %v, want %d", canceled, err, n)
	}
}

// (b) An operator's cancel of a commit waiting for the standby makes it
// visible on the primary only: the create answers 503, never 200.
func TestOperatorCancelOfAWaitingCommit(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openStore(t, Config{URL: pair.MultiHostURL(haDB), StatementTimeout: time.Minute})
	p := plant.Plant{ID: 1, Name: "fern"}

	pair.StallStandby(t)
	outcome := createAsync(ctx, s, p)
	cancelWaitingCommits(t, pair, 1)
	if err := <-outcome; !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, errUnreplicated) {
		t.Fatalf("Create whose wait for the standby was canceled = %v, want ErrUnavailable (503) for an unreplicated commit", err)
	}
	if got := s.Stats(); got.UnreplicatedCommits != 1 || got.OutlivedCommits != 0 {
		t.Fatalf("Stats = %+v, want 1 unreplicated, 0 outlived", got)
	}
}

// (c) A row made local-only by a canceled wait is not the ground for a
// 200, a 412 or a 404 while the standby stalls: a read (Get, List), an
// identical re-create (Unchanged), a stale conditional update or delete
// all wait for the standby and answer 503; once it resumes they answer as
// usual.
func TestAnswersOnALocalOnlyRowWaitForTheStandby(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openHA(t, pair)
	p := plant.Plant{ID: 1, Name: "fern"}
	stale := plant.Plant{ID: 1, Name: "moss"}

	// A deadline longer than the call's: the commit waits until canceled.
	slow := openStore(t, Config{URL: pair.MultiHostURL(haDB), StatementTimeout: time.Minute})

	pair.StallStandby(t)
	outcome := createAsync(ctx, slow, p)
	cancelWaitingCommits(t, pair, 1)
	if err := <-outcome; !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Create whose wait was canceled = %v, want ErrUnavailable", err)
	}
	if n, err := pair.Primary.QueryInt(haDB, `SELECT count(*) FROM plants WHERE id = $1`, p.ID); n != 1 || err != nil {
		t.Fatalf("the local-only row on the primary: %d, %v; the test needs it visible there", n, err)
	}

	// No read shows it: a failover would take it back.
	if got, err := s.Get(ctx, p.ID); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Get of a local-only row = %+v, %v, want ErrUnavailable (503)", got, err)
	}
	if got, err := s.List(ctx, plant.ListQuery{Limit: 10}); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("List over a local-only row = %+v, %v, want ErrUnavailable (503)", got, err)
	}

	if result, err := s.Create(ctx, p); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("identical re-create of a local-only row = %v, %v, want ErrUnavailable (503)", result, err)
	}
	if err := s.Replace(ctx, plant.Plant{ID: 1, Name: "new"}, &stale); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Replace with a stale precondition on a local-only row = %v, want ErrUnavailable (503)", err)
	}
	if err := s.DeleteMatching(ctx, stale); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("DeleteMatching with a stale precondition on a local-only row = %v, want ErrUnavailable (503)", err)
	}

	pair.ResumeStandby(t)
	waitFor(t, "the reads' commits", func() bool { return s.Stats().OrphanedCommits == 0 })
	if got, err := s.Get(ctx, p.ID); err != nil || !got.Equal(p) {
		t.Fatalf("Get after the standby resumed = %+v, %v, want %+v", got, err, p)
	}
	if got, err := s.List(ctx, plant.ListQuery{Limit: 10}); err != nil || len(got) != 1 || !got[0].Equal(p) {
		t.Fatalf("List after the standby resumed = %+v, %v, want [%+v]", got, err, p)
	}
	if result, err := s.Create(ctx, p); result != plant.Unchanged || err != nil {
		t.Fatalf("identical re-create after the standby resumed = %v, %v, want Unchanged", result, err)
	}
	if err := s.Replace(ctx, plant.Plant{ID: 1, Name: "new"}, &stale); !errors.Is(err, plant.ErrPreconditionFailed) {
		t.Fatalf("Replace with a stale precondition = %v, want ErrPreconditionFailed (412)", err)
	}
	if err := s.DeleteMatching(ctx, stale); !errors.Is(err, plant.ErrPreconditionFailed) {
		t.Fatalf("DeleteMatching with a stale precondition = %v, want ErrPreconditionFailed (412)", err)
	}
}

// (d) A create queued behind busy lanes answers 503 at its caller's
// deadline and leaves the queue: it is never stored later.
func TestQueuedCreateLeavesAtItsDeadline(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openHA(t, pair)
	if err := s.Start(ctx); err != nil { // the lanes wait for creates
		t.Fatal(err)
	}

	pair.StallStandby(t)
	// Two creates, one per lane, whose commits wait for the standby.
	busy := []<-chan error{createAsync(ctx, s, plant.Plant{ID: 1, Name: "one"})}
	waitFor(t, "the first lane's commit", func() bool { return waitingForStandby(t, pair) == 1 })
	busy = append(busy, createAsync(ctx, s, plant.Plant{ID: 2, Name: "two"}))
	waitFor(t, "the second lane's commit", func() bool { return waitingForStandby(t, pair) == 2 })

	queued := plant.Plant{ID: 3, Name: "queued"}
	deadline, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := s.Create(deadline, queued); !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued Create at its deadline = %v, want ErrUnavailable (503) for the deadline", err)
	}
	for i, ch := range busy {
		if err := <-ch; !errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("lane %d's create = %v, want ErrUnavailable at the call deadline", i+1, err)
		}
	}

	pair.ResumeStandby(t)
	// The lanes are free again once a create after the queued one is
	// stored: the queue is first in, first out.
	if _, err := s.Create(ctx, plant.Plant{ID: 4, Name: "after"}); err != nil {
		t.Fatalf("Create after the standby resumed: %v", err)
	}
	if _, err := s.Get(ctx, queued.ID); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get of the create that left the queue = %v, want ErrNotFound: it ran after answering 503", err)
	}
	if n := s.creates.queue.Len(); n != 0 {
		t.Fatalf("%d creates still queued", n)
	}
}

// (e) A clean failover: the primary is killed (SIGKILL) and the standby
// promoted while creates run. The store finds the new primary by itself,
// every failure on the way is a 503, and every acknowledged create is on
// the new primary.
func TestFailoverKeepsEveryAcknowledgedCreate(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openHA(t, pair)

	const workers = 4
	var (
		mu         sync.Mutex
		acked      []int64
		unexpected []error
		promoted   bool
		afterward  int // acknowledged since the promotion
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := int64(w) + 1; ; id += workers {
				select {
				case <-stop:
					return
				default:
				}
				result, err := s.Create(ctx, plant.Plant{ID: id, Name: "p"})
				mu.Lock()
				switch {
				case err == nil && result == plant.Created:
					acked = append(acked, id)
					if promoted {
						afterward++
					}
				case !errors.Is(err, plant.ErrUnavailable):
					unexpected = append(unexpected, err)
				}
				mu.Unlock()
			}
		}()
	}
	count := func(f func() int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return f() >= 200 }
	}
	waitFor(t, "creates before the failover", count(func() int { return len(acked) }))
	if err := pair.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := pair.Standby.Promote(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	promoted = true
	mu.Unlock()
	poll.Wait(t, 10*time.Millisecond, time.Minute, "creates on the new primary", func() (bool, error) { return count(func() int { return afterward })(), nil })
	close(stop)
	wg.Wait()

	if len(unexpected) > 0 {
		t.Fatalf("%d creates failed with other than ErrUnavailable (503), the first: %v", len(unexpected), unexpected[0])
	}
	conn, err := pgx.Connect(ctx, pair.Standby.URL(haDB))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var stored int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM plants WHERE id = ANY($1)`, acked).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != len(acked) {
		t.Fatalf("the new primary holds %d of the %d acknowledged creates", stored, len(acked))
	}
}

// While half the pool holds commits whose callers left (a stalled
// standby), writes and reads (which wait for the standby too) are refused
// at once with 503, and the other half serves the readiness check.
func TestHalfThePoolForCommitsWaitingOnReplication(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openStore(t, Config{
		URL:              pair.MultiHostURL(haDB),
		MaxConns:         4,
		ConnectTimeout:   time.Second,
		StatementTimeout: time.Second,
	})
	for id := int64(1); id <= 3; id++ {
		if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "fern"}); err != nil {
			t.Fatal(err)
		}
	}

	pair.StallStandby(t)
	for id := int64(1); id <= 2; id++ {
		if err := s.Replace(ctx, plant.Plant{ID: id, Name: "moss"}, nil); !errors.Is(err, plant.ErrUnavailable) {
			t.Fatalf("Replace %d with a stalled standby = %v, want ErrUnavailable (503)", id, err)
		}
	}
	if got := s.Stats().OrphanedCommits; got != 2 {
		t.Fatalf("%d orphaned commits, want 2", got)
	}
	if err := s.Delete(ctx, 3); !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, errBacklog) {
		t.Fatalf("Delete with half the pool waiting = %v, want ErrUnavailable (503) for the backlog", err)
	}
	// A read waits for the standby too (readBarrierSQL): it is refused at
	// once rather than holding a connection of the other half.
	if got, err := s.Get(ctx, 3); !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, errBacklog) {
		t.Fatalf("Get with half the pool waiting = %+v, %v, want ErrUnavailable (503) for the backlog", got, err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping with half the pool waiting: %v", err)
	}

	pair.ResumeStandby(t)
	waitFor(t, "the updates' commits", func() bool { return s.Stats().OrphanedCommits == 0 })
	if err := s.Delete(ctx, 3); err != nil {
		t.Fatalf("Delete after the standby resumed: %v", err)
	}
	for id := int64(1); id <= 2; id++ {
		if got, err := s.Get(ctx, id); err != nil || got.Name != "moss" {
			t.Fatalf("Get %d after the standby resumed = %+v, %v, want the update stored", id, got, err)
		}
	}
}

// Close does not wait out a commit stalled on the standby: it closes the
// commit's connection, without a cancel, and the server completes the
// commit once the standby is back.
func TestCloseLeavesWaitingCommitsToTheServer(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s, err := Open(ctx, Config{
		URL:              pair.MultiHostURL(haDB),
		ConnectTimeout:   time.Second,
		StatementTimeout: time.Second,
		CommitTimeout:    time.Hour, // longer than the test may run
	})
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, s)
	pair.StallStandby(t)
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Create with a stalled standby = %v, want ErrUnavailable", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := waitingForStandby(t, pair); n != 1 {
		t.Fatalf("%d commits wait for the standby after Close, want 1: Close canceled it", n)
	}
	pair.ResumeStandby(t)
	waitFor(t, "the plant on the standby", func() bool { return onStandby(t, pair, 1) == 1 })
}

// A create lane whose statement outlives all its callers (a stalled
// standby) leaves it to finish on its connection and goes on with another,
// until half the pool is held so: then creates are answered 503 at once.
func TestCreateLanesGoOnPastStalledCommits(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openStore(t, Config{
		URL:              pair.MultiHostURL(haDB),
		MaxConns:         4,
		ConnectTimeout:   time.Second,
		StatementTimeout: time.Second,
	})

	pair.StallStandby(t)
	for id := int64(1); id <= 2; id++ {
		if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "fern"}); !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Create %d with a stalled standby = %v, want ErrUnavailable (503) at its deadline", id, err)
		}
		waitFor(t, "the lane to leave the statement", func() bool { return s.stats.detached.Load() == id })
	}
	if _, err := s.Create(ctx, plant.Plant{ID: 3, Name: "fern"}); !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, errBacklog) {
		t.Fatalf("Create with half the pool waiting = %v, want ErrUnavailable (503) for the backlog", err)
	}
	if n := waitingForStandby(t, pair); n != 2 {
		t.Fatalf("%d commits wait for the standby, want 2", n)
	}

	pair.ResumeStandby(t)
	waitFor(t, "the commits", func() bool { return s.stats.detached.Load() == 0 })
	for id := int64(1); id <= 2; id++ {
		if got, err := s.Get(ctx, id); err != nil || got.Name != "fern" {
			t.Fatalf("Get %d after the standby resumed = %+v, %v, want it stored", id, got, err)
		}
	}
	if _, err := s.Get(ctx, 3); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get of the create refused for the backlog = %v, want ErrNotFound", err)
	}
	if result, err := s.Create(ctx, plant.Plant{ID: 3, Name: "fern"}); result != plant.Created || err != nil {
		t.Fatalf("Create after the standby resumed = %v, %v, want Created", result, err)
	}
}

// xidCounter turns autovacuum off on s's server (its analyses would take
// transaction ids) until the test ends, and returns a reading of the next
// transaction id, which counts the transactions that took one since: on a
// cluster no other test uses meanwhile, only the store's.
func xidCounter(t *testing.T, s *Store) func() int64 {
	t.Helper()
	for _, sql := range []string{`ALTER SYSTEM SET autovacuum = off`, `SELECT pg_reload_conf()`} {
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// Before s closes (cleanups run last registered first): the next test
	// on the cluster gets it as it was.
	t.Cleanup(func() {
		for _, sql := range []string{`ALTER SYSTEM RESET autovacuum`, `SELECT pg_reload_conf()`} {
			if _, err := s.pool.Exec(ctx, sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	})
	return func() int64 {
		var xid int64
		if err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		return xid
	}
}

// notified returns a wait for the next notification on the change log's
// channel. A store sends it in a transaction of its own, a few
// milliseconds after a change commits: a test that counts transaction ids
// waits for it before it counts.
func notified(t *testing.T, url string) func() {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := conn.WaitForNotification(wctx); err != nil {
			t.Fatalf("no notification of the change: %v", err)
		}
	}
}

// Reads write no WAL on a server without synchronous standbys: the read
// barrier costs a single server nothing but the statement (no transaction
// id, so no commit record and no flush). It runs in TestOnAClusterAlone:
// no other test takes transaction ids on c meanwhile.
func testReadsWriteNothingWithoutSynchronousStandbys(t *testing.T, c *pgtest.Cluster) {
	url := c.NewDatabase(t)
	s := openStore(t, Config{URL: url})
	announced := notified(t, url)
	p := plant.Plant{ID: 1, Name: "fern"}
	if _, err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	announced()
	nextXID := xidCounter(t, s)
	before := nextXID()
	for range 20 {
		if got, err := s.Get(ctx, p.ID); err != nil || !got.Equal(p) {
			t.Fatalf("Get = %+v, %v", got, err)
		}
		if _, err := s.Get(ctx, 2); !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("Get of a missing plant = %v, want ErrNotFound", err)
		}
		if got, err := s.List(ctx, plant.ListQuery{Limit: 10}); err != nil || len(got) != 1 {
			t.Fatalf("List = %+v, %v", got, err)
		}
	}
	if after := nextXID(); after != before {
		t.Fatalf("60 reads took %d transaction ids on a server without synchronous standbys, want 0", after-before)
	}
}

// With a synchronous standby the first read after a change waits for a
// barrier, which commits past what it saw, and still answers what is
// stored; the reads after it, with nothing changed since, are covered by
// that barrier and take none (see readbarrier.go).
func TestReadsWaitForTheStandbyPastWhatTheySaw(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openHA(t, pair)
	announced := notified(t, pair.MultiHostURL(haDB))
	p := plant.Plant{ID: 1, Name: "fern"}
	if _, err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	announced()
	nextXID := xidCounter(t, s)
	before := nextXID()
	if got, err := s.Get(ctx, p.ID); err != nil || !got.Equal(p) {
		t.Fatalf("Get = %+v, %v, want %+v", got, err, p)
	}
	if _, err := s.Get(ctx, 2); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get of a missing plant = %v, want ErrNotFound", err)
	}
	if got, err := s.List(ctx, plant.ListQuery{Limit: 10}); err != nil || len(got) != 1 || !got[0].Equal(p) {
		t.Fatalf("List = %+v, %v, want [%+v]", got, err, p)
	}
	// The first read took a transaction id, the barrier's; the others none.
	if got := nextXID() - before; got != 1 {
		t.Fatalf("3 reads took %d transaction ids with a synchronous standby, want 1: the first one's barrier", got)
	}
	if got := s.barriers.sent.Load(); got != 1 {
		t.Fatalf("3 reads sent %d barriers, want 1", got)
	}
}

// A delete made local-only by a canceled wait is not the ground for a 404
// while the standby stalls: a read, a repeated delete, an update and a
// conditional delete of the missing plant wait for the standby and answer
// 503; once it resumes they answer 404.
func TestAnswersOnALocalOnlyDeleteWaitForTheStandby(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openHA(t, pair)
	p := plant.Plant{ID: 1, Name: "fern"}
	if _, err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	slow := openStore(t, Config{URL: pair.MultiHostURL(haDB), StatementTimeout: time.Minute})

	pair.StallStandby(t)
	outcome := make(chan error, 1)
	go func() { outcome <- slow.Delete(ctx, p.ID) }()
	cancelWaitingCommits(t, pair, 1)
	if err := <-outcome; !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Delete whose wait was canceled = %v, want ErrUnavailable", err)
	}
	if n, err := pair.Primary.QueryInt(haDB, `SELECT count(*) FROM plants WHERE id = $1`, p.ID); n != 0 || err != nil {
		t.Fatalf("the plant on the primary: %d, %v; the test needs its delete visible there", n, err)
	}

	answers := func(want error) {
		t.Helper()
		if _, err := s.Get(ctx, p.ID); !errors.Is(err, want) {
			t.Fatalf("Get = %v, want %v", err, want)
		}
		if err := s.Delete(ctx, p.ID); !errors.Is(err, want) {
			t.Fatalf("Delete = %v, want %v", err, want)
		}
		if err := s.Replace(ctx, plant.Plant{ID: 1, Name: "new"}, nil); !errors.Is(err, want) {
			t.Fatalf("Replace = %v, want %v", err, want)
		}
		if err := s.DeleteMatching(ctx, p); !errors.Is(err, want) {
			t.Fatalf("DeleteMatching = %v, want %v", err, want)
		}
	}
	answers(plant.ErrUnavailable)
	pair.ResumeStandby(t)
	waitFor(t, "the answers' commits", func() bool { return s.Stats().OrphanedCommits == 0 })
	answers(plant.ErrNotFound)
}
