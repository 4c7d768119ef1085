// Package outboxtest is the conformance suite of outbox.Store: every store
// that keeps an outbox runs it, as storetest holds every plant.Store to the
// same semantics. Its events are written as a webhook sender's plan writes
// them: in the commits of the plants the store creates.
package outboxtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

var ctx = context.Background()

// LongLease is a lease that does not pass during a test.
const LongLease = time.Hour

const hour = LongLease

// Subject is a store under test, new and empty: its plants and its outbox
// (the same store's), before its first write, and its change log, against
// which the deliveries' versions and times are checked (nil skips that).
type Subject struct {
	Plants  plant.Store
	Outbox  outbox.Store
	Changes changes.ChangeLog
}

// Run runs the suite on the stores open makes.
func Run(t *testing.T, open func(t *testing.T) Subject) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, h harness)
	}{
		{"EventsAreClaimedOncePerEndpointWithTheirBodies", testEventsAreClaimedOncePerEndpointWithTheirBodies},
		{"RetryDeliveredAndStats", testRetryDeliveredAndStats},
		{"BuriedDeadLettersAreListedAndRedelivered", testBuriedDeadLettersAreListedAndRedelivered},
		{"ADeadLetterSaysWhatItWas", testADeadLetterSaysWhatItWas},
		{"DropExceptRemovesOnlyTheRemovedEndpointsPending", testDropExceptRemovesOnlyTheRemovedEndpointsPending},
		{"OnlyACommittedChangeWritesItsEvents", testOnlyACommittedChangeWritesItsEvents},
		{"EveryCommittedChangeIsAnnounced", testEveryCommittedChangeIsAnnounced},
		{"DeliveredEventsAreReplayed", testDeliveredEventsAreReplayed},
		{"PruneRemovesOnlyOldDeliveredEvents", testPruneRemovesOnlyOldDeliveredEvents},
		{"AttemptsAreOnRecordWithTheirState", testAttemptsAreOnRecordWithTheirState},
		{"ResendInAnyState", testResendInAnyState},
		{"PruneRemovesOldAttempts", testPruneRemovesOldAttempts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			w := NewWriter(s, LongLease)
			tc.test(t, harness{box: s.Outbox, plants: s.Plants, changes: s.Changes, w: w, write: func(t *testing.T, ev outbox.Event, endpoints ...string) {
				t.Helper()
				w.Write(t, ev, false, endpoints...)
			}})
		})
	}
}

// harness is an outbox and a way to write events into it.
type harness struct {
	box     outbox.Outbox
	plants  plant.Store
	changes changes.ChangeLog // nil: not checked
	w       *Writer
	write   func(t *testing.T, ev outbox.Event, endpoints ...string)
}

// Writer writes events as a sender's plan does: each Write creates a new
// plant, whose commit writes the event for the endpoints. Writes run one
// at a time.
type Writer struct {
	s      Subject
	next   planned
	plants int64

	mu    sync.Mutex
	asked []changes.Change // the changes of the plan's latest call
}

// planned is what the next write's plan writes: its event for each of
// endpoints, leased or not; with describe, an event describing each
// change (eventOf) instead.
type planned struct {
	event     outbox.Event
	endpoints []string
	leased    bool
	describe  bool
}

// NewWriter hooks s's outbox (lease: see outbox.Store.OnChange): the
// writer is its planner.
func NewWriter(s Subject, lease time.Duration) *Writer {
	w := &Writer{s: s}
	s.Outbox.OnChange(lease, w)
	return w
}

// Plan implements outbox.Planner: the next write's rows.
func (w *Writer) Plan(changes []changes.Change, claims bool) ([]outbox.Row, func(map[int64]changes.Committed, error)) {
	w.mu.Lock()
	w.asked = slices.Clone(changes) // a commit run again asks again: the latest call counts
	w.mu.Unlock()
	var rows []outbox.Row
	for _, c := range changes {
		ev := w.next.event
		if w.next.describe {
			ev = eventOf(c)
		}
		for _, ep := range w.next.endpoints {
			rows = append(rows, outbox.Row{ID: outbox.NewID(), Plant: c.Plant(), Kind: c.Kind, Endpoint: ep, Event: ev, Leased: claims && w.next.leased})
		}
	}
	return rows, nil
}

// Write creates the next plant, writing ev for endpoints in its commit,
// leased when leased (and the store claims as it writes).
func (w *Writer) Write(t *testing.T, ev outbox.Event, leased bool, endpoints ...string) {
	t.Helper()
	w.plants++
	w.Create(t, w.plants, ev, leased, endpoints...)
}

// Create creates plant id, writing ev for endpoints if its commit stores
// it (not for an identical re-create).
func (w *Writer) Create(t *testing.T, id int64, ev outbox.Event, leased bool, endpoints ...string) {
	t.Helper()
	w.next = planned{event: ev, endpoints: endpoints, leased: leased}
	if _, err := w.s.Plants.Create(ctx, plant.Plant{ID: id, Name: "plant"}); err != nil {
		t.Fatalf("Create(%d) = %v", id, err)
	}
}

// Asked returns the changes the plan was asked for in its latest call, and
// forgets them.
func (w *Writer) Asked() []changes.Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	asked := w.asked
	w.asked = nil
	return asked
}

// eventOf is an event describing c: its kind, and its plant (the id only
// for Deleted).
func eventOf(c changes.Change) outbox.Event {
	p := c.After
	if c.Kind == changes.Deleted {
		p = plant.Plant{ID: c.Before.ID}
	}
	return outbox.Event{Body: describe(c.Kind, p)}
}

func describe(k changes.Kind, p plant.Plant) []byte {
	tag := "-"
	if p.Tag != nil {
		tag = *p.Tag
	}
	return fmt.Appendf(nil, `{"type":%q,"id":%d,"name":%q,"tag":%q}`, k, p.ID, p.Name, tag)
}

// Event is the n-th test event.
func Event(n int) outbox.Event {
	return outbox.Event{Body: fmt.Appendf(nil, `{"id":%d,"name":"plant %d"}`, n, n), TraceParent: fmt.Sprintf("00-%032x-%016x-01", n, n)}
}

// Claim claims, failing t on an error.
func Claim(t *testing.T, box outbox.Outbox, endpoint string, max int, lease time.Duration) []outbox.Delivery {
	t.Helper()
	ds, err := box.Claim(ctx, endpoint, max, lease)
	if err != nil {
		t.Fatalf("Claim(%s) = %v", endpoint, err)
	}
	return ds
}

// claimSoon claims, looking again every 5 ms for up to 2 s rather than
// assuming that a write is claimable the moment it returns.
func claimSoon(t *testing.T, box outbox.Outbox, endpoint string, want int, lease time.Duration) []outbox.Delivery {
	t.Helper()
	var got []outbox.Delivery
	poll.Wait(t, 5*time.Millisecond, 2*time.Second, fmt.Sprintf("%d of %s's deliveries claimed", want, endpoint), func() (bool, error) {
		got = append(got, Claim(t, box, endpoint, want-len(got), lease)...)
		return len(got) == want, fmt.Errorf("claimed %d", len(got))
	})
	return got
}

// ClaimSoonAfter waits out wait, then claims every 10 ms until something
// comes, for up to 20 s.
func ClaimSoonAfter(t *testing.T, box outbox.Outbox, endpoint string, wait time.Duration) []outbox.Delivery {
	t.Helper()
	time.Sleep(wait)
	var got []outbox.Delivery
	poll.Wait(t, 10*time.Millisecond, 20*time.Second, "a delivery of "+endpoint+"'s due after its lease", func() (bool, error) {
		got = Claim(t, box, endpoint, 10, hour)
		return len(got) > 0, nil
	})
	return got
}

func testEventsAreClaimedOncePerEndpointWithTheirBodies(t *testing.T, h harness) {
	h.write(t, Event(1), "a", "b")
	h.write(t, Event(2), "a")
	a := claimSoon(t, h.box, "a", 2, hour)
	b := claimSoon(t, h.box, "b", 1, hour)
	if again := Claim(t, h.box, "a", 10, hour); len(again) != 0 {
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
		`a {"id":1,"name":"plant 1"} ` + Event(1).TraceParent,
		`a {"id":2,"name":"plant 2"} ` + Event(2).TraceParent,
		`b {"id":1,"name":"plant 1"} ` + Event(1).TraceParent,
	} {
		if !bodies[want] {
			t.Errorf("no delivery %s; have %v", want, bodies)
		}
	}
}

func testRetryDeliveredAndStats(t *testing.T, h harness) {
	h.write(t, Event(1), "a")
	h.write(t, Event(2), "a")
	h.write(t, Event(3), "a")
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
	if more := Claim(t, h.box, "a", 10, hour); len(more) != 0 {
		t.Fatalf("claimed %d more; the one retried in an hour is not due, the delivered one is settled", len(more))
	}
	stats, err := h.box.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := stats["a"]; s.Pending != 2 || s.DeadLetters != 0 || s.OldestPending.IsZero() || time.Since(s.OldestPending) > time.Minute {
		t.Fatalf("stats = %+v, want 2 pending, the oldest just now", s)
	}
}

func testBuriedDeadLettersAreListedAndRedelivered(t *testing.T, h harness) {
	h.write(t, Event(1), "a", "b")
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
		dead[0].LastError != "answered 500" || string(dead[0].Body) != string(Event(1).Body) || dead[0].DiedAt.IsZero() {
		t.Fatalf("dead letters of a = %+v", dead)
	}
	if all, _ := h.box.DeadLetters(ctx, "", 10); len(all) != 2 {
		t.Fatalf("%d dead letters in all, want 2", len(all))
	}
	if one, _ := h.box.DeadLetters(ctx, "", 1); len(one) != 1 {
		t.Fatalf("limit 1 listed %d", len(one))
	}
	if got := Claim(t, h.box, "a", 10, 0); len(got) != 0 {
		t.Fatalf("a dead letter was claimed: %v", got)
	}
	stats, _ := h.box.Stats(ctx)
	if s := stats["a"]; s.Pending != 0 || s.DeadLetters != 1 || !s.OldestPending.IsZero() {
		t.Fatalf("stats of a = %+v, want 1 dead letter, nothing pending", s)
	}
	// Its endpoint not configured: refused, and the letter stays.
	for _, configured := range [][]string{nil, {"b"}} {
		var nc *outbox.NotConfiguredError
		if err := h.box.Redeliver(ctx, da.ID, configured); !errors.As(err, &nc) || nc.Endpoint != "a" {
			t.Fatalf("Redeliver with endpoints %v = %v, want a NotConfiguredError of a", configured, err)
		}
	}
	if dead, _ := h.box.DeadLetters(ctx, "a", 10); len(dead) != 1 || dead[0].ID != da.ID || dead[0].Attempts != 1 {
		t.Fatalf("dead letters of a after a refused redeliver = %+v, want it kept as it was", dead)
	}
	if err := h.box.Redeliver(ctx, da.ID, []string{"b", "a"}); err != nil {
		t.Fatal(err)
	}
	if err := h.box.Redeliver(ctx, da.ID, []string{"a"}); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("second Redeliver = %v, want ErrNotFound", err)
	}
	if err := h.box.Redeliver(ctx, "msg_nope", []string{"a"}); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("Redeliver(unknown) = %v, want ErrNotFound", err)
	}
	back := claimSoon(t, h.box, "a", 1, hour)[0]
	if back.ID != da.ID || back.Attempt != 1 {
		t.Fatalf("redelivered: claimed %s attempt %d, want %s attempt 1", back.ID, back.Attempt, da.ID)
	}
}

func testDropExceptRemovesOnlyTheRemovedEndpointsPending(t *testing.T, h harness) {
	for i := range 3 {
		h.write(t, Event(i), "keep", "gone", "also-gone")
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
}

// A create that changes nothing (an identical re-create) or fails (a
// conflict) writes no event, whatever the plan gives for it.
func testOnlyACommittedChangeWritesItsEvents(t *testing.T, h harness) {
	h.w.Create(t, 1, Event(1), false, "a")
	h.w.Create(t, 1, Event(2), false, "a") // identical: Unchanged
	h.w.next = planned{event: Event(3), endpoints: []string{"a"}}
	if _, err := h.plants.Create(ctx, plant.Plant{ID: 1, Name: "another"}); !errors.Is(err, plant.ErrConflict) {
		t.Fatalf("Create of a different plant under a taken id = %v, want ErrConflict", err)
	}
	// Every create returned, so what it wrote is committed (and, on bolt,
	// on disk): claimable now.
	got := Claim(t, h.box, "a", 10, LongLease)
	if len(got) != 1 || string(got[0].Body) != string(Event(1).Body) {
		t.Fatalf("claimed %d deliveries %v, want only the first create's event", len(got), got)
	}
}
