package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/outbox"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var ctx = context.Background()

// harness is an outbox and a way to write events into it, as a create's
// hook does.
type harness struct {
	box   outbox.Outbox
	write func(t *testing.T, ev outbox.Event, endpoints ...string)
}

func boltHarness(t *testing.T) harness {
	s, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	box := outbox.NewBolt(s)
	return harness{box: box, write: func(t *testing.T, ev outbox.Event, endpoints ...string) {
		t.Helper()
		if err := s.Update(ctx, func(tx *bolt.Tx) error { return box.WriteEvent(tx, ev, endpoints) }); err != nil {
			t.Fatal(err)
		}
	}}
}

func postgresHarness(t *testing.T) harness {
	s, box, next := hookedPostgres(t, hour)
	var plants int64
	return harness{box: box, write: func(t *testing.T, ev outbox.Event, endpoints ...string) {
		t.Helper()
		*next = planned{event: ev, endpoints: endpoints}
		plants++
		if res, err := s.Create(ctx, plant.Plant{ID: plants, Name: "plant"}); res != plant.Created || err != nil {
			t.Fatalf("Create = %v, %v", res, err)
		}
	}}
}

// planned is what the next create's hook writes: its event for each of
// endpoints, leased or not.
type planned struct {
	event     outbox.Event
	endpoints []string
	leased    bool
}

// hookedPostgres is a postgres store whose creates write, through the
// outbox's hook, the rows *next plans (creates run one at a time here).
func hookedPostgres(t *testing.T, lease time.Duration) (*pgstore.Store, *outbox.Postgres, *planned) {
	s, err := pgstore.Open(ctx, pgstore.Config{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	box := outbox.NewPostgres(s.Pool())
	next := &planned{}
	s.OnCreate(box.Hook(lease, func(creating []pgstore.Creating) ([]outbox.Row, func(map[int64]struct{}, error)) {
		var rows []outbox.Row
		for _, c := range creating {
			for _, ep := range next.endpoints {
				rows = append(rows, outbox.Row{ID: outbox.NewID(), Plant: c.Plant.ID, Endpoint: ep, Event: next.event, Leased: next.leased})
			}
		}
		return rows, nil
	}))
	return s, box, next
}

var harnesses = map[string]func(t *testing.T) harness{"bolt": boltHarness, "postgres": postgresHarness}

func forEachOutbox(t *testing.T, test func(t *testing.T, h harness)) {
	for name, open := range harnesses {
		t.Run(name, func(t *testing.T) { test(t, open(t)) })
	}
}

func event(n int) outbox.Event {
	return outbox.Event{Body: fmt.Appendf(nil, `{"id":%d,"name":"plant %d"}`, n, n), TraceParent: fmt.Sprintf("00-%032x-%016x-01", n, n)}
}

const hour = time.Hour

func claim(t *testing.T, box outbox.Outbox, endpoint string, max int, lease time.Duration) []outbox.Delivery {
	t.Helper()
	ds, err := box.Claim(ctx, endpoint, max, lease)
	if err != nil {
		t.Fatalf("Claim(%s) = %v", endpoint, err)
	}
	return ds
}

// claimSoon claims, looking again for a while rather than assuming that a
// write is claimable the moment it returns.
func claimSoon(t *testing.T, box outbox.Outbox, endpoint string, want int, lease time.Duration) []outbox.Delivery {
	t.Helper()
	var got []outbox.Delivery
	for range 200 {
		got = append(got, claim(t, box, endpoint, want-len(got), lease)...)
		if len(got) == want {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("claimed %d of %s's deliveries, want %d", len(got), endpoint, want)
	return nil
}

func TestEventsAreClaimedOncePerEndpointWithTheirBodies(t *testing.T) {
	t.Parallel()
	forEachOutbox(t, func(t *testing.T, h harness) {
		h.write(t, event(1), "a", "b")
		h.write(t, event(2), "a")
		a := claimSoon(t, h.box, "a", 2, hour)
		b := claimSoon(t, h.box, "b", 1, hour)
		if again := claim(t, h.box, "a", 10, hour); len(again) != 0 {
			t.Fatalf("a leased delivery was claimed again: %v", again)
		}
		ids := map[string]bool{}
		bodies := map[string]bool{}
		for _, d := range append(a, b...) {
			if !strings.HasPrefix(d.ID, "msg_") || len(d.ID) != 30 || ids[d.ID] {
				t.Errorf("delivery id %q: want a distinct msg_ and 26 characters", d.ID)
			}
			ids[d.ID] = true
			if d.Attempt != 1 || d.CreatedAt.IsZero() || time.Since(d.CreatedAt) > time.Minute {
				t.Errorf("delivery %s: attempt %d created %v, want attempt 1 just now", d.ID, d.Attempt, d.CreatedAt)
			}
			bodies[d.Endpoint+" "+string(d.Body)+" "+d.TraceParent] = true
		}
		for _, want := range []string{
			`a {"id":1,"name":"plant 1"} ` + event(1).TraceParent,
			`a {"id":2,"name":"plant 2"} ` + event(2).TraceParent,
			`b {"id":1,"name":"plant 1"} ` + event(1).TraceParent,
		} {
			if !bodies[want] {
				t.Errorf("no delivery %s; have %v", want, bodies)
			}
		}
	})
}

func TestRetryDeliveredAndStats(t *testing.T) {
	t.Parallel()
	forEachOutbox(t, func(t *testing.T, h harness) {
		h.write(t, event(1), "a")
		h.write(t, event(2), "a")
		h.write(t, event(3), "a")
		ds := claimSoon(t, h.box, "a", 3, hour)
		slices.SortFunc(ds, func(x, y outbox.Delivery) int { return strings.Compare(string(x.Body), string(y.Body)) })
		if err := h.box.Retry(ctx, ds[0], 0, "answered 500"); err != nil {
			t.Fatal(err)
		}
		if err := h.box.Retry(ctx, ds[1], hour, "answered 503"); err != nil {
			t.Fatal(err)
		}
		if err := h.box.Delivered(ctx, ds[2:]); err != nil {
			t.Fatal(err)
		}
		again := claimSoon(t, h.box, "a", 1, hour)
		if again[0].ID != ds[0].ID || again[0].Attempt != 2 || string(again[0].Body) != string(ds[0].Body) {
			t.Fatalf("retried now: claimed %s attempt %d, want %s attempt 2", again[0].ID, again[0].Attempt, ds[0].ID)
		}
		if more := claim(t, h.box, "a", 10, hour); len(more) != 0 {
			t.Fatalf("claimed %d more; the one retried in an hour is not due, the delivered one is gone", len(more))
		}
		stats, err := h.box.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := stats["a"]; s.Pending != 2 || s.DeadLetters != 0 || s.OldestPending.IsZero() || time.Since(s.OldestPending) > time.Minute {
			t.Fatalf("stats = %+v, want 2 pending, the oldest just now", s)
		}
	})
}

func TestBuriedDeadLettersAreListedAndRedelivered(t *testing.T) {
	t.Parallel()
	forEachOutbox(t, func(t *testing.T, h harness) {
		h.write(t, event(1), "a", "b")
		da := claimSoon(t, h.box, "a", 1, hour)[0]
		db := claimSoon(t, h.box, "b", 1, hour)[0]
		if err := h.box.Bury(ctx, da, "answered 500"); err != nil {
			t.Fatal(err)
		}
		if err := h.box.Bury(ctx, db, "no answer within --webhooks-timeout"); err != nil {
			t.Fatal(err)
		}
		dead, err := h.box.DeadLetters(ctx, "a", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) != 1 || dead[0].ID != da.ID || dead[0].Endpoint != "a" || dead[0].Attempts != 1 ||
			dead[0].LastError != "answered 500" || string(dead[0].Body) != string(event(1).Body) || dead[0].DiedAt.IsZero() {
			t.Fatalf("dead letters of a = %+v", dead)
		}
		if all, _ := h.box.DeadLetters(ctx, "", 10); len(all) != 2 {
			t.Fatalf("%d dead letters in all, want 2", len(all))
		}
		if one, _ := h.box.DeadLetters(ctx, "", 1); len(one) != 1 {
			t.Fatalf("limit 1 listed %d", len(one))
		}
		if got := claim(t, h.box, "a", 10, 0); len(got) != 0 {
			t.Fatalf("a dead letter was claimed: %v", got)
		}
		stats, _ := h.box.Stats(ctx)
		if s := stats["a"]; s.Pending != 0 || s.DeadLetters != 1 || !s.OldestPending.IsZero() {
			t.Fatalf("stats of a = %+v, want 1 dead letter, nothing pending", s)
		}
		if err := h.box.Redeliver(ctx, da.ID); err != nil {
			t.Fatal(err)
		}
		if err := h.box.Redeliver(ctx, da.ID); !errors.Is(err, outbox.ErrNotFound) {
			t.Fatalf("second Redeliver = %v, want ErrNotFound", err)
		}
		if err := h.box.Redeliver(ctx, "msg_nope"); !errors.Is(err, outbox.ErrNotFound) {
			t.Fatalf("Redeliver(unknown) = %v, want ErrNotFound", err)
		}
		back := claimSoon(t, h.box, "a", 1, hour)[0]
		if back.ID != da.ID || back.Attempt != 1 {
			t.Fatalf("redelivered: claimed %s attempt %d, want %s attempt 1", back.ID, back.Attempt, da.ID)
		}
	})
}

func TestDropExceptRemovesOnlyTheRemovedEndpointsPending(t *testing.T) {
	t.Parallel()
	forEachOutbox(t, func(t *testing.T, h harness) {
		for i := range 3 {
			h.write(t, event(i), "keep", "gone", "also-gone")
		}
		d := claimSoon(t, h.box, "gone", 1, hour)[0]
		if err := h.box.Bury(ctx, d, "answered 500"); err != nil {
			t.Fatal(err)
		}
		dropped, err := h.box.DropExcept(ctx, []string{"keep"})
		if err != nil {
			t.Fatal(err)
		}
		if dropped["gone"] != 2 || dropped["also-gone"] != 3 || len(dropped) != 2 {
			t.Fatalf("dropped %v, want gone 2 (its dead letter stays), also-gone 3", dropped)
		}
		if got := claimSoon(t, h.box, "keep", 3, hour); len(got) != 3 {
			t.Fatal("keep lost deliveries")
		}
		if dead, _ := h.box.DeadLetters(ctx, "gone", 10); len(dead) != 1 {
			t.Fatalf("the removed endpoint's dead letter: %d kept, want 1", len(dead))
		}
		if dropped, _ := h.box.DropExcept(ctx, nil); dropped["keep"] != 3 {
			t.Fatalf("DropExcept(nil) dropped %v, want keep's 3", dropped)
		}
	})
}

// Replicas claiming at once take different deliveries (SKIP LOCKED), and a
// replica that died holding a lease loses it when the lease ends; its late
// result then changes nothing.
func TestPostgresLeasesAcrossReplicas(t *testing.T) {
	t.Parallel()
	h := postgresHarness(t)
	for i := range 40 {
		h.write(t, event(i), "a")
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

	h.write(t, event(100), "b")
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
	s, box, next := hookedPostgres(t, lease)
	create := func(id int64, ev outbox.Event, leased bool, endpoints ...string) {
		t.Helper()
		*next = planned{event: ev, endpoints: endpoints, leased: leased}
		if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "plant"}); err != nil {
			t.Fatal(err)
		}
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
	mine := outbox.Row{ID: id, Plant: 3, Endpoint: "b", Event: event(4), Leased: true}.Delivery(time.Now())
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

// Ids made one after another sort one after another (the time comes
// first), and ids made in one millisecond still differ (80 random bits).
func TestIDsSortInTheOrderTheyWereMade(t *testing.T) {
	first := outbox.NewID()
	time.Sleep(2 * time.Millisecond)
	second := outbox.NewID()
	if first >= second {
		t.Fatalf("%s made before %s sorts after it", first, second)
	}
	seen := map[string]bool{}
	for range 1000 {
		id := outbox.NewID()
		if len(id) != 30 || !strings.HasPrefix(id, "msg_") || strings.Trim(id[4:], "234567abcdefghijklmnopqrstuvwxyz") != "" || seen[id] {
			t.Fatalf("id %q: want a distinct msg_ and 26 of [2-7a-z]", id)
		}
		seen[id] = true
	}
}

// claimSoonAfter waits out wait, then claims until something comes.
func claimSoonAfter(t *testing.T, box outbox.Outbox, endpoint string, wait time.Duration) []outbox.Delivery {
	t.Helper()
	time.Sleep(wait)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got := claim(t, box, endpoint, 10, hour); len(got) > 0 {
			return got
		}
	}
	t.Fatalf("nothing of %s's was due within 20s of its lease", endpoint)
	return nil
}
