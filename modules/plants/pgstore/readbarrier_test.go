package pgstore

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Reads queued while a barrier is in flight are not answered by it: they
// wait for the next barrier, one for all of them. The standby stalls so
// that the first barrier stays in flight while the reads queue; an
// operator's cancel of its wait then fails the first read (503, the
// barrier committed on the primary only), and had the queued reads
// shared that barrier they would fail too. Two barrier commits answer
// the seventeen reads, and a read waiting for one holds no connection.
func TestReadsQueuedBehindABarrierShareTheNext(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openStore(t, Config{URL: pair.MultiHostURL(haDB), StatementTimeout: time.Minute})
	announced := notified(t, pair.MultiHostURL(haDB))
	p := plant.Plant{ID: 1, Name: "fern"}
	if _, err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	announced()
	nextXID := xidCounter(t, s)
	before := nextXID()

	type answer struct {
		p   plant.Plant
		err error
	}
	get := func() <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			got, err := s.Get(ctx, p.ID)
			ch <- answer{got, err}
		}()
		return ch
	}

	pair.StallStandby(t)
	first := get()
	waitFor(t, "the first read's barrier to wait for the standby", func() bool { return waitingForStandby(t, pair) == 1 })
	const queued = 16
	later := make([]<-chan answer, queued)
	for i := range later {
		later[i] = get()
	}
	waitFor(t, "the later reads to queue", func() bool { return s.barriers.queue.Len() == queued })
	if got := s.pool.Stat().AcquiredConns(); got != 1 {
		t.Fatalf("%d connections acquired while %d reads wait for a barrier, want 1: the barrier's", got, queued+1)
	}

	cancelWaitingCommits(t, pair, 1)
	if a := <-first; !errors.Is(a.err, plant.ErrUnavailable) || !errors.Is(a.err, errUnreplicated) {
		t.Fatalf("Get whose barrier's wait was canceled = %+v, %v, want ErrUnavailable (503) for an unreplicated barrier", a.p, a.err)
	}
	waitFor(t, "the next barrier to wait for the standby", func() bool {
		return s.barriers.sent.Load() == 2 && waitingForStandby(t, pair) == 1
	})
	for i, ch := range later {
		select {
		case a := <-ch:
			t.Fatalf("read %d answered before its barrier committed: %+v, %v", i, a.p, a.err)
		default:
		}
	}

	pair.ResumeStandby(t)
	for i, ch := range later {
		if a := <-ch; a.err != nil || !a.p.Equal(p) {
			t.Fatalf("read %d = %+v, %v, want %+v", i, a.p, a.err, p)
		}
	}
	if got := s.barriers.sent.Load(); got != 2 {
		t.Fatalf("%d barriers sent for %d reads, want 2", got, queued+1)
	}
	if got := nextXID() - before; got != 2 {
		t.Fatalf("%d reads took %d transaction ids, want 2: one per barrier", queued+1, got)
	}
}

// The primary and its standby have names of their own (serverSQL), so a
// barrier on a promoted standby is never taken for one on the old primary.
func TestServersOfAPairHaveNamesOfTheirOwn(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	name := func(c *pgtest.Cluster) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.URL(haDB))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := nameServer(ctx, conn); err != nil {
			t.Fatal(err)
		}
		return serverOf(conn)
	}
	primary, standby := name(pair.Primary), name(pair.Standby)
	if primary == "" || primary == standby {
		t.Fatalf("the primary is %q, the standby %q: want two names", primary, standby)
	}
}

// A barrier that ran on another server than the read says nothing of
// what the read saw: the read answers unavailable (503).
func TestABarrierOnAnotherServerAnswersUnavailable(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	err := failed("get", s.barriers.wait(ctx, "a server the store never reached", snapshot{}))
	if !errors.Is(err, plant.ErrUnavailable) || !errors.Is(err, errOtherServer) {
		t.Fatalf("wait for a barrier on another server = %v, want ErrUnavailable (503)", err)
	}
	if got := s.barriers.sent.Load(); got != 1 {
		t.Fatalf("%d barriers sent, want 1", got)
	}
}

// Without synchronous standbys a read queues for no barrier: no lane is
// spawned, no barrier is sent.
func TestReadsOnASingleServerSendNoBarrier(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	p := plant.Plant{ID: 1, Name: "fern"}
	if _, err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, p.ID); err != nil || !got.Equal(p) {
		t.Fatalf("Get = %+v, %v, want %+v", got, err, p)
	}
	if _, err := s.Get(ctx, 2); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("Get of a missing plant = %v, want ErrNotFound", err)
	}
	if got, err := s.List(ctx, plant.ListQuery{Limit: 10}); err != nil || len(got) != 1 || !got[0].Equal(p) {
		t.Fatalf("List = %+v, %v, want [%+v]", got, err, p)
	}
	s.barriers.mu.Lock()
	started := s.barriers.started
	s.barriers.mu.Unlock()
	if sent := s.barriers.sent.Load(); started || sent != 0 {
		t.Fatalf("barrier lanes started %v, %d barriers sent, want none on a single server", started, sent)
	}
}

// A barrier covers a read when every transaction the read saw ended, but
// the barrier's own, the barrier's snapshot saw ended too.
func TestCoverage(t *testing.T) {
	t.Parallel()
	barrier := coverage{server: "a", snap: snapshot{xmax: 100, xip: []uint64{90, 95}}, xid: 100}
	for _, tc := range []struct {
		name   string
		server string
		read   string
		want   bool
	}{
		{"the same snapshot", "a", "90:100:90,95", true},
		{"an older snapshot", "a", "80:90:", true},
		{"the barrier's own transaction ended since", "a", "90:101:90,95", true},
		{"a transaction after the barrier's ended", "a", "90:102:90,95", false},
		{"the barrier still runs", "a", "90:101:90,95,100", true},
		{"a transaction that ran at the barrier ended", "a", "90:101:95", false},
		{"another transaction the barrier saw running ended", "a", "90:101:90", false},
		{"a transaction the barrier saw running still runs, a new one too", "a", "90:102:90,95,101", true},
		{"another server", "b", "90:100:90,95", false},
		{"far past the barrier", "a", "90:1000:" + runningFrom(100, 1000), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read, err := parseSnapshot(tc.read)
			if err != nil {
				t.Fatal(err)
			}
			if got := barrier.covers(tc.server, read); got != tc.want {
				t.Fatalf("covers(%q, %q) = %v, want %v", tc.server, tc.read, got, tc.want)
			}
		})
	}
	if (coverage{}).covers("", snapshot{}) {
		t.Fatal("no barrier covers a read")
	}
	for _, bad := range []string{"", "1:2", "1:x:", "1:2:3,y"} {
		if _, err := parseSnapshot(bad); err == nil {
			t.Errorf("parseSnapshot(%q) succeeded, want an error", bad)
		}
	}
}

// runningFrom lists the transaction ids from..to-1, comma-separated.
func runningFrom(from, to uint64) string {
	ids := make([]string, 0, to-from)
	for x := from; x < to; x++ {
		ids = append(ids, strconv.FormatUint(x, 10))
	}
	return strings.Join(ids, ",")
}

// Reads with nothing changed since a barrier are covered by it and send
// none; a commit after it, made local-only by an operator's cancel, is
// not covered: reads wait for a new barrier, 503 while the standby
// stalls, whatever row they read.
func TestACoveredReadStillWaitsForALaterCommit(t *testing.T) {
	pair := pgtest.NewPair(t, haDB)
	s := openHA(t, pair)
	p := plant.Plant{ID: 1, Name: "fern"}
	q := plant.Plant{ID: 2, Name: "moss"}
	if _, err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if got, err := s.Get(ctx, p.ID); err != nil || !got.Equal(p) {
			t.Fatalf("Get = %+v, %v, want %+v", got, err, p)
		}
	}
	if got := s.barriers.sent.Load(); got != 1 {
		t.Fatalf("5 reads with nothing changed between them sent %d barriers, want 1", got)
	}

	slow := openStore(t, Config{URL: pair.MultiHostURL(haDB), StatementTimeout: time.Minute})
	pair.StallStandby(t)
	outcome := createAsync(ctx, slow, q)
	cancelWaitingCommits(t, pair, 1)
	if err := <-outcome; !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Create whose wait was canceled = %v, want ErrUnavailable", err)
	}
	if got, err := s.Get(ctx, p.ID); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Get of a plant stored before, after a local-only commit = %+v, %v, want ErrUnavailable (503)", got, err)
	}
	if got, err := s.Get(ctx, q.ID); !errors.Is(err, plant.ErrUnavailable) {
		t.Fatalf("Get of a local-only plant = %+v, %v, want ErrUnavailable (503)", got, err)
	}
	pair.ResumeStandby(t)
	waitFor(t, "the barriers' commits", func() bool { return s.Stats().OrphanedCommits == 0 })
	if got, err := s.Get(ctx, q.ID); err != nil || !got.Equal(q) {
		t.Fatalf("Get after the standby resumed = %+v, %v, want %+v", got, err, q)
	}
}
