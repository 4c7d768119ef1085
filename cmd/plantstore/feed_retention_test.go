package main

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/poll"
)

// The feed's followers against the retention, on two PostgreSQL replicas
// with --changes-retention at its minimum (a minute: the pruners run every
// 6 seconds). The changes are aged in the database rather than waited for:
// each round moves every change past the retention, then waits for a
// pruner to remove them all, so that what a follower is told next is
// decided by exact counts, not by time. (The memory and bolt stores, whose
// pruning is time-driven in the process, are proved under testing/synctest
// in modules/plants and client.)

// agedPast moves every change in the log at url past the retention and
// waits until a replica's pruner has removed them all.
func agedPast(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE plant_changes SET at = at - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	err = poll.Until(ctx, 100*time.Millisecond, time.Minute, func() (bool, error) {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM plant_changes`).Scan(&n)
		return err == nil && n == 0, err
	})
	if err != nil {
		t.Fatalf("the pruners did not remove the aged changes: %v", err)
	}
}

// TestQuietFilterNeverFallsBehind: a follower whose filter matches nothing
// while other plants are written, and which asks again at least once per
// retention, is never answered 410: its long poll's next, and its stream's
// bookmarks, move to the head, and the head is never behind a prune. A
// follower that stopped asking at the start is gone, so the prunes did
// remove what the quiet follower read past.
func TestQuietFilterNeverFallsBehind(t *testing.T) {
	t.Parallel()
	cfg := postgresConfig(t)
	cfg.Plants.ChangesRetention = time.Minute
	writer, reader, url := feedReplicas(t, cfg)
	start := headOf(t, reader)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound on a hang
	defer cancel()
	req := reader.request(t, http.MethodGet, "/plants/changes?tag=rose&after="+start, testToken, "", nil).WithContext(ctx)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := reader.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	bookmarks := streamBookmarks(resp)

	polled, streamed, head := start, start, start
	for round := range 3 {
		for i := range 5 {
			if r := writer.post(t, fmt.Sprintf(`{"id":%d,"name":"fern","tag":"fern"}`, round*10+i)); r.Status != http.StatusOK {
				t.Fatalf("create = %d %s", r.Status, r.Body)
			}
		}
		// The head is the round's fifth change, as the unfiltered feed
		// gives it: a head read while another transaction (a pruner's)
		// is open may not show the last create yet.
		head = shownAfter(t, writer, head, 5)
		for range 100 { // each poll reads on (pages of 2) to the head, or waits a second for the reader to show it
			if polled == head {
				break
			}
			changes, next := feedPageOf(t, reader, "tag=rose&limit=2&wait=1s&after="+polled)
			if len(changes) != 0 {
				t.Fatalf("round %d: the quiet filter was given %v", round, changes)
			}
			polled = next
		}
		for streamed != head {
			ev, ok := <-bookmarks
			if !ok {
				t.Fatalf("round %d: the stream ended at %s, before the head %s", round, streamed, head)
			}
			if ev.event != "bookmark" {
				t.Fatalf("round %d: the quiet stream sent %+v", round, ev)
			}
			streamed = ev.id
		}
		if polled != head {
			t.Fatalf("round %d: the long polls' next is %s, the head %s", round, polled, head)
		}
		agedPast(t, url)
		// The follower asks again after the prune: its cursor is the
		// newest change pruned, which a log answers.
		changes, next := feedPageOf(t, reader, "tag=rose&after="+polled)
		if len(changes) != 0 || next != polled {
			t.Fatalf("round %d, after the prune: %v next %s, want nothing and next %s", round, changes, next, polled)
		}
	}
	// The stream, open through the three prunes, resumes from its last
	// bookmark too.
	cancel()
	again := reader.request(t, http.MethodGet, "/plants/changes?tag=rose", testToken, "", nil)
	again.Header.Set("Accept", "text/event-stream")
	again.Header.Set("Last-Event-ID", streamed)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	resumed, err := reader.Client.Do(again.WithContext(ctx2))
	if err != nil {
		t.Fatal(err)
	}
	resumed.Body.Close()
	if resumed.StatusCode != http.StatusOK {
		t.Fatalf("the stream resumed from its last bookmark: %d", resumed.StatusCode)
	}
	r := reader.do(t, reader.request(t, http.MethodGet, "/plants/changes?tag=rose&after="+start, testToken, "", nil))
	if want := `{"error":410,"message":"the cursor is older than the change log's retention window: list the plants again (GET /plants) and follow the changes from the listing's Plantstore-Changes-Cursor header"}`; r.Status != http.StatusGone || string(r.Body) != want {
		t.Fatalf("a follower that stopped asking: %d %s, want 410 %s", r.Status, r.Body, want)
	}
}

// shownAfter follows the unfiltered feed of s from after ("" for the
// beginning) until it has given n changes, and returns the last one's
// cursor: on postgres a change is in the feed once the cluster's older
// transactions (a pruner's) have ended, and a listing's cursor taken
// before then would be behind it.
func shownAfter(t *testing.T, s *testServer, after string, n int) string {
	t.Helper()
	for got, pages := 0, 0; got < n; pages++ {
		if pages == 100 { // a bound on a hang
			t.Fatalf("%d of %d changes in the feed after %q", got, n, after)
		}
		query := "limit=100&wait=1s"
		if after != "" {
			query += "&after=" + after
		}
		changes, next := feedPageOf(t, s, query)
		got, after = got+len(changes), next
	}
	return after
}

// sseEvent is an event of a stream: its id and its event type.
type sseEvent struct{ id, event string }

// streamBookmarks reads resp's events in the background, sending each
// (id and type) to the channel, closed when the stream ends.
func streamBookmarks(resp *http.Response) <-chan sseEvent {
	events := make(chan sseEvent, 1000)
	go func() {
		defer close(events)
		lines := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for lines.Scan() {
			line := lines.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case line == "" && ev.id != "":
				events <- ev
				ev = sseEvent{}
			}
		}
	}()
	return events
}

// TestFollowStartsOverAfterAPrune: client.Follow on one replica, while the
// plants are written through the other, starts over by itself when the
// retention took its cursor: the caller, applying events and nothing
// else, ends with a copy equal to the store and keeps following.
func TestFollowStartsOverAfterAPrune(t *testing.T) {
	t.Parallel()
	cfg := postgresConfig(t)
	cfg.Plants.ChangesRetention = time.Minute
	writer, reader, url := feedReplicas(t, cfg)
	w, c := newTestClient(t, writer), newTestClient(t, reader)
	ctx := context.Background()
	write := func(ops ...func() error) {
		t.Helper()
		for _, op := range ops {
			if err := op(); err != nil {
				t.Fatal(err)
			}
		}
	}
	create := func(id int64, name string) func() error {
		return func() error { return w.Create(ctx, client.Plant{ID: id, Name: name}) }
	}
	update := func(id int64, name, tag string) func() error {
		return func() error { _, err := w.Update(ctx, client.Plant{ID: id, Name: name, Tag: &tag}, ""); return err }
	}
	remove := func(id int64) func() error { return func() error { return w.Delete(ctx, id, "") } }

	write(create(1, "fern"), create(2, "ivy"), create(3, "moss"))
	// Once the reader's feed shows them, its snapshot's end is past them,
	// and the feed does not give them again after the snapshot.
	shownAfter(t, reader, "", 3)
	followCtx, stopFollowing := context.WithCancel(ctx)
	next, stop := iter.Pull2(c.Follow(followCtx, client.FollowOptions{Wait: 2 * time.Second}))
	defer func() { stopFollowing(); stop() }()
	mirror := map[int64]client.Plant{}
	take := func(n int) []string {
		t.Helper()
		var got []string
		for range n {
			ev, err, ok := next()
			if err != nil || !ok {
				t.Fatalf("after %q: %v (iterating: %v)", got, err, ok)
			}
			switch ev.Kind {
			case client.Added, client.Changed:
				mirror[ev.Plant.ID] = ev.Plant
			case client.Removed:
				delete(mirror, ev.Plant.ID)
			}
			// A removal found by a start over carries no version (0); the
			// snapshot's and the feed's events carry one.
			from := "versioned"
			if ev.Version == 0 {
				from = "no version"
			}
			switch ev.Kind {
			case client.InSync:
				got = append(got, "in sync")
			case client.Removed:
				got = append(got, fmt.Sprintf("removed %d (%s)", ev.Plant.ID, from))
			default:
				got = append(got, fmt.Sprintf("%s %d %s %v (%s)", ev.Kind, ev.Plant.ID, ev.Plant.Name, ev.Plant.Tag != nil, from))
			}
		}
		return got
	}
	want := func(got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("events\n%q\nwant\n%q", got, want)
		}
	}
	want(take(4), "added 1 fern false (versioned)", "added 2 ivy false (versioned)", "added 3 moss false (versioned)", "in sync")
	write(update(3, "moss", "shade"))
	want(take(1), "changed 3 moss true (versioned)")

	// While the follower is away, the retention takes what it has not read.
	write(remove(2), update(1, "fern", "sun"), create(4, "sage"))
	agedPast(t, url)
	pruned := headOf(t, reader) // an empty log's head: the newest change pruned
	write(create(5, "rue"))
	shownAfter(t, reader, pruned, 1)
	want(take(5), "removed 2 (no version)", "changed 1 fern true (versioned)", "added 4 sage false (versioned)", "added 5 rue false (versioned)", "in sync")
	var store []client.Plant
	for p, err := range c.All(ctx, client.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		store = append(store, p)
	}
	if len(store) != len(mirror) {
		t.Fatalf("the copy holds %d plants, the store %d", len(mirror), len(store))
	}
	for _, p := range store {
		if m, ok := mirror[p.ID]; !ok || m.Name != p.Name || (m.Tag == nil) != (p.Tag == nil) || (m.Tag != nil && *m.Tag != *p.Tag) {
			t.Fatalf("the copy's plant %d is %+v, the store's %+v", p.ID, m, p)
		}
	}
	write(remove(4))
	want(take(1), "removed 4 (versioned)")
}
