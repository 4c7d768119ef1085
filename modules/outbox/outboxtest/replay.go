package outboxtest

import (
	"slices"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/outbox"
)

// byVersion sorts deliveries in the order of their changes.
func byVersion(ds []outbox.Delivery) []outbox.Delivery {
	slices.SortFunc(ds, func(x, y outbox.Delivery) int { return int(x.Version - y.Version) })
	return ds
}

// sameEvents fails t unless got are want's events, as first claimed (ids,
// bodies, kinds, versions, times), each claimed for its first attempt
// again. It returns got, sorted by version.
func sameEvents(t *testing.T, what string, got, want []outbox.Delivery) []outbox.Delivery {
	t.Helper()
	byVersion(got)
	if len(got) != len(want) {
		t.Fatalf("%s: %d deliveries, want %d", what, len(got), len(want))
	}
	for i, d := range got {
		w := want[i]
		if d.ID != w.ID || d.Endpoint != w.Endpoint || string(d.Body) != string(w.Body) || d.TraceParent != w.TraceParent ||
			d.Kind != w.Kind || d.Version != w.Version || !d.CreatedAt.Equal(w.CreatedAt) || d.Attempt != 1 {
			t.Errorf("%s %d: %s %s %s %s v%d at %v attempt %d, want %s %s %s %s v%d at %v attempt 1", what, i,
				d.ID, d.Endpoint, d.Body, d.Kind, d.Version, d.CreatedAt, d.Attempt, w.ID, w.Endpoint, w.Body, w.Kind, w.Version, w.CreatedAt)
		}
	}
	return got
}

// replay replays, failing t unless it made want deliveries due.
func replay(t *testing.T, box outbox.Outbox, endpoint string, since time.Time, limit, want int) {
	t.Helper()
	n, err := box.Replay(ctx, endpoint, since, limit)
	if err != nil || n != want {
		t.Fatalf("Replay(%s, since %v, limit %d) = %d, %v; want %d", endpoint, since, limit, n, err, want)
	}
}

// Delivered events are kept: Replay makes those committed since a time due
// again (at most limit, oldest first) with their ids, bodies and versions,
// and leaves pending and dead ones as they are, so a replay run twice sends
// an event once more at most.
func testDeliveredEventsAreReplayed(t *testing.T, h harness) {
	h.write(t, Event(1), "a")
	h.write(t, Event(2), "a")
	h.write(t, Event(3), "a")
	h.write(t, Event(4), "b")
	first := byVersion(claimSoon(t, h.box, "a", 3, hour))
	if err := h.box.Delivered(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := Claim(t, h.box, "a", 10, 0); len(got) != 0 {
		t.Fatalf("claimed %d delivered events", len(got))
	}
	if stats, _ := h.box.Stats(ctx); stats["a"].Pending != 0 {
		t.Fatalf("stats of a = %+v: a delivered event counted as pending", stats["a"])
	}

	// Since the second event's commit: the second and the third.
	replay(t, h.box, "a", first[1].CreatedAt, 10, 2)
	again := sameEvents(t, "replayed since the second", claimSoon(t, h.box, "a", 2, hour), first[1:])
	// Those two are pending (claimed): only the first is made due.
	replay(t, h.box, "a", time.Time{}, 10, 1)
	replay(t, h.box, "a", time.Time{}, 10, 0)
	again = append(sameEvents(t, "replayed while the others were pending", claimSoon(t, h.box, "a", 1, hour), first[:1]), again...)
	if stats, _ := h.box.Stats(ctx); stats["a"].Pending != 3 {
		t.Fatalf("stats of a = %+v, want the 3 replayed pending", stats["a"])
	}

	// Delivered again (as claimed again): a limit takes the oldest first.
	if err := h.box.Delivered(ctx, again); err != nil {
		t.Fatal(err)
	}
	replay(t, h.box, "a", time.Time{}, 1, 1)
	sameEvents(t, "replayed with limit 1", claimSoon(t, h.box, "a", 1, hour), first[:1])
	replay(t, h.box, "a", time.Time{}, 10, 2)
	sameEvents(t, "replayed the rest", claimSoon(t, h.box, "a", 2, hour), first[1:])

	// A dead letter is not replayed; another endpoint's events neither.
	dead := claimSoon(t, h.box, "b", 1, hour)[0]
	if err := h.box.Bury(ctx, dead, "answered 500"); err != nil {
		t.Fatal(err)
	}
	replay(t, h.box, "b", time.Time{}, 10, 0)
	replay(t, h.box, "nobody", time.Time{}, 10, 0)
	if letters, _ := h.box.DeadLetters(ctx, "b", 10); len(letters) != 1 || letters[0].ID != dead.ID || letters[0].Attempts != 1 {
		t.Fatalf("dead letters of b = %+v, want %s kept as it was", letters, dead.ID)
	}
}

// Prune removes the delivered events committed before its time, and never
// a pending event or a dead letter.
func testPruneRemovesOnlyOldDeliveredEvents(t *testing.T, h harness) {
	for i := range 3 {
		h.write(t, Event(i), "a")
	}
	h.write(t, Event(3), "b")
	ds := byVersion(claimSoon(t, h.box, "a", 3, hour))
	if err := h.box.Delivered(ctx, ds[:2]); err != nil {
		t.Fatal(err)
	}
	if err := h.box.Retry(ctx, ds[2], hour, "answered 503"); err != nil {
		t.Fatal(err)
	}
	dead := claimSoon(t, h.box, "b", 1, hour)[0]
	if err := h.box.Bury(ctx, dead, "answered 500"); err != nil {
		t.Fatal(err)
	}
	prune := func(before time.Time, want int) {
		t.Helper()
		if n, err := h.box.Prune(ctx, before); err != nil || n != want {
			t.Fatalf("Prune(%v) = %d, %v; want %d", before, n, err, want)
		}
	}
	prune(ds[0].CreatedAt, 0) // committed at, not before
	prune(ds[1].CreatedAt, 1) // the first
	replay(t, h.box, "a", time.Time{}, 10, 1)
	again := sameEvents(t, "replayed after a prune", claimSoon(t, h.box, "a", 1, hour), ds[1:2])
	if err := h.box.Delivered(ctx, again); err != nil {
		t.Fatal(err)
	}
	prune(time.Now().Add(hour), 1) // the second; the pending one and the dead letter stay
	prune(time.Now().Add(hour), 0)
	replay(t, h.box, "a", time.Time{}, 10, 0)
	stats, err := h.box.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := stats["a"], stats["b"]; a.Pending != 1 || a.DeadLetters != 0 || b.Pending != 0 || b.DeadLetters != 1 {
		t.Fatalf("stats after the prunes: a %+v, b %+v; want a 1 pending, b 1 dead letter", a, b)
	}
	if letters, _ := h.box.DeadLetters(ctx, "b", 10); len(letters) != 1 || letters[0].ID != dead.ID {
		t.Fatalf("dead letters of b = %+v, want %s", letters, dead.ID)
	}
}
