package pgstore

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/outbox/outboxtest"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/plants/storetest"
)

// testConformance runs in TestOnAClusterAlone: the change log's suite
// needs a cluster no other test writes to (see there), and the outbox's
// checks the deliveries against the change log. The postgres store
// supports everything: an outbox, a change log, and what it acknowledged
// survives a reopen on its database.
func testConformance(t *testing.T, c *pgtest.Cluster) {
	storetest.Run(t, storetest.Subject{
		Supports: storetest.Supports{Outbox: true, ChangeLog: true, Durable: true, Batches: true},
		Open: func(t *testing.T) storetest.Store {
			s := openStore(t, Config{URL: c.NewMigratedDatabase(t, plantsSchema)})
			return storetest.Store{Plants: s, Outbox: s.Outbox(), Changes: s}
		},
		Storage: func(t *testing.T) func(*testing.T) plant.Store {
			url := c.NewMigratedDatabase(t, plantsSchema)
			return func(t *testing.T) plant.Store {
				s, err := Open(ctx, Config{URL: url})
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				mustStart(t, s)
				return s
			}
		},
	})
}

const hour = outboxtest.LongLease

var (
	event          = outboxtest.Event
	claim          = outboxtest.Claim
	claimSoonAfter = outboxtest.ClaimSoonAfter
)

// Replicas claiming at once take different deliveries (SKIP LOCKED), and a
// replica that died holding a lease loses it when the lease ends; its late
// result then changes nothing.
func TestPostgresLeasesAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewDatabase(t)})
	h := struct{ box outbox.Outbox }{s.Outbox()}
	w := outboxtest.NewWriter(outboxtest.Subject{Plants: s, Outbox: s.Outbox()}, hour)
	for i := range 40 {
		w.Write(t, event(i), false, "a")
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				ds, err := h.box.Claim(ctx, "a", 3, hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 40 {
		t.Fatalf("claimed %d distinct deliveries, want 40", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s claimed %d times under concurrent claims", id, n)
		}
	}

	w.Write(t, event(100), false, "b")
	first := claim(t, h.box, "b", 1, 50*time.Millisecond)[0]
	time.Sleep(200 * time.Millisecond) // the lease ends, as its replica's would after a SIGKILL
	second := claim(t, h.box, "b", 1, hour)
	if len(second) != 1 || second[0].ID != first.ID || second[0].Attempt != 2 {
		t.Fatalf("after the lease: claimed %+v, want %s attempt 2", second, first.ID)
	}
	if err := h.box.Retry(ctx, first, 0, "late"); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, h.box, "b", 1, hour); len(got) != 0 {
		t.Fatalf("the late Retry of a lost lease made the delivery due: %+v", got)
	}
	if err := h.box.Bury(ctx, first, "late"); err != nil {
		t.Fatal(err)
	}
	if dead, _ := h.box.DeadLetters(ctx, "b", 10); len(dead) != 0 {
		t.Fatalf("the late Bury of a lost lease buried it: %+v", dead)
	}
}

// A leased row is written as its writer's claim: attempt 1, claimed by no
// one else until its lease passes (its writer died), and settled like any
// claimed delivery. A create that inserts no plant (an identical re-create)
// writes no row.
func TestPostgresLeasedRowsAreTheirWritersClaim(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second // far longer than a create and a claim, even on a loaded machine
	s := openStore(t, Config{URL: pgtest.NewDatabase(t)})
	box := s.Outbox()
	w := outboxtest.NewWriter(outboxtest.Subject{Plants: s, Outbox: box}, lease)
	create := func(id int64, ev outbox.Event, leased bool, endpoints ...string) {
		t.Helper()
		w.Create(t, id, ev, leased, endpoints...)
	}
	create(1, event(1), true, "a")
	create(2, event(2), false, "a")
	create(1, event(3), false, "a") // identical re-create: no row
	due := claim(t, box, "a", 10, hour)
	if len(due) != 1 || string(due[0].Body) != string(event(2).Body) || due[0].Attempt != 1 {
		t.Fatalf("claimed %+v, want only the row written due, attempt 1", due)
	}
	// The writer "died" holding the lease: once it passes, the row is due.
	late := claimSoonAfter(t, box, "a", lease)
	if len(late) != 1 || string(late[0].Body) != string(event(1).Body) || late[0].Attempt != 2 {
		t.Fatalf("after the lease claimed %+v, want the leased row at attempt 2", late)
	}

	// The writer settles its rows as Row.Delivery describes them.
	create(3, event(4), true, "b")
	rows, err := s.Pool().Query(ctx, `SELECT id FROM webhook_deliveries WHERE endpoint = 'b'`)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	mine := outbox.Row{ID: id, Plant: 3, Endpoint: "b", Event: event(4), Leased: true}.Delivery(changes.Committed{At: time.Now()})
	if err := box.Retry(ctx, mine, 0, "answered 500"); err != nil {
		t.Fatal(err)
	}
	again := claim(t, box, "b", 10, hour)
	if len(again) != 1 || again[0].ID != id || again[0].Attempt != 2 {
		t.Fatalf("after the writer's Retry claimed %+v, want %s attempt 2", again, id)
	}
	if err := box.Delivered(ctx, again); err != nil {
		t.Fatal(err)
	}
	if stats, _ := box.Stats(ctx); stats["b"].Pending != 0 || stats["a"].Pending != 2 {
		t.Fatalf("stats = %+v, want b settled and a's 2 pending", stats)
	}
}

// The outbox keeps every delivered event for the retention window, so the
// statements that run all the time (the claim, the stats every few seconds,
// the dead letters' list) must read only what they count, through their
// partial indexes, never the delivered rows: on a table of 50,000
// delivered rows and a few others, none of them scans the table, whether
// its prepared plan is generic or custom.
func TestOutboxStatementsSkipDeliveredRows(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	if _, err := s.pool.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint, body, delivered_at)
SELECT 'msg_' || i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, '\x00', now() FROM generate_series(1, 50000) i;
INSERT INTO webhook_deliveries (id, endpoint, body) SELECT 'pending_' || i, 'a', '\x00' FROM generate_series(1, 10) i;
INSERT INTO webhook_deliveries (id, endpoint, body, dead_at) SELECT 'dead_' || i, 'a', '\x00', now() FROM generate_series(1, 3) i;
ANALYZE webhook_deliveries`); err != nil {
		t.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, stmt := range []string{
		"PREPARE stats AS " + pgStatsSQL,
		"PREPARE dead(text, int) AS " + pgDeadSQL,
		"PREPARE claim(text, int, float8) AS " + pgClaimSQL,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { _, _ = conn.Exec(ctx, "DEALLOCATE ALL; RESET plan_cache_mode") }()
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for _, execute := range []string{"stats", "dead('a', 100)", "dead('', 100)", "claim('a', 100, 60)"} {
			rows, _ := conn.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE "+execute)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatalf("%s: %v", execute, err)
			}
			if plan := strings.Join(lines, "\n"); strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s, %s: the plan reads the whole table:\n%s", mode, execute, plan)
			}
		}
	}
	stats, err := s.Outbox().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := stats["a"], stats["b"]; a.Pending != 10 || a.DeadLetters != 3 || a.OldestPending.IsZero() || len(stats) != 1 || b != (outbox.Stats{}) {
		t.Fatalf("stats = %+v, want a with 10 pending and 3 dead letters, and nothing of b's delivered rows", stats)
	}
}
