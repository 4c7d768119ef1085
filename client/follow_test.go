package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// follower applies Follow's events to a copy, as a caller does, and
// returns the events up to the next InSync.
type follower struct {
	next   func() (Event, error, bool)
	mirror map[int64]Plant
}

func startFollow(t *testing.T, c *Client, opts FollowOptions) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	next, stop := iter.Pull2(c.Follow(ctx, opts))
	t.Cleanup(func() { cancel(); stop() })
	return &follower{next: next, mirror: map[int64]Plant{}}
}

// take applies n events, returning them as "kind id name/tag version".
func (f *follower) take(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for range n {
		ev, err, ok := f.next()
		if err != nil || !ok {
			t.Fatalf("after %q: %v (iterating: %v)", got, err, ok)
		}
		switch ev.Kind {
		case Added, Changed:
			f.mirror[ev.Plant.ID] = ev.Plant
		case Removed:
			delete(f.mirror, ev.Plant.ID)
		}
		got = append(got, describe(ev))
	}
	return got
}

func describe(ev Event) string {
	switch ev.Kind {
	case InSync:
		return "in sync"
	case Removed:
		return fmt.Sprintf("removed %d v%d", ev.Plant.ID, ev.Version)
	}
	return fmt.Sprintf("%s %s v%d", ev.Kind, showPlant(&ev.Plant), ev.Version)
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
}

// sameAsStore fails unless mirror holds exactly the store's plants with tag
// (all of them when tag is nil).
func sameAsStore(t *testing.T, c *Client, mirror map[int64]Plant, tag *string) {
	t.Helper()
	var want []string
	for p, err := range c.All(context.Background(), ListOptions{Tag: tag}) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, showPlant(&p))
	}
	var got []string
	for _, p := range mirror {
		got = append(got, showPlant(&p))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("mirror %q, store %q", got, want)
	}
}

func replace(id int64, name string, tag *string) func(context.Context, *memstore.Store) error {
	return func(ctx context.Context, s *memstore.Store) error {
		return s.Replace(ctx, plant.Plant{ID: id, Name: name, Tag: tag}, nil)
	}
}

func remove(id int64) func(context.Context, *memstore.Store) error {
	return func(ctx context.Context, s *memstore.Store) error { return s.Delete(ctx, id) }
}

// TestFollowStartsOverWhenTheCursorIsGone: Follow reads a snapshot (its
// plants carry the snapshot's version), follows, and when the log is
// pruned past its cursor reads a snapshot again by itself, handing over
// only what changed since its last view; the caller's copy, applying
// events and nothing else, ends equal to the store and keeps following.
func TestFollowStartsOverWhenTheCursorIsGone(t *testing.T) {
	store := memstore.New()
	write(t, store, create(1, "fern"), create(2, "ivy"), create(3, "moss"))
	srv := newFeedServer(t, store, nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := startFollow(t, c, FollowOptions{Wait: 2 * time.Second})
	wantEvents(t, f.take(t, 4),
		`added 1 "fern" untagged v3`, `added 2 "ivy" untagged v3`, `added 3 "moss" untagged v3`, "in sync")

	write(t, store, replace(3, "moss", plant.StringPtr("shade")))
	wantEvents(t, f.take(t, 1), `changed 3 "moss" tag "shade" v4`)

	// While the follower is away, the log loses what it has not read.
	write(t, store, remove(2), replace(1, "fern", plant.StringPtr("sun")), create(4, "sage"))
	if _, err := store.PruneChanges(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	write(t, store, create(5, "rue"))
	wantEvents(t, f.take(t, 5),
		`removed 2 v0`, `changed 1 "fern" tag "sun" v8`, `added 4 "sage" untagged v8`, `added 5 "rue" untagged v8`, "in sync")
	sameAsStore(t, c, f.mirror, nil)

	write(t, store, remove(4))
	wantEvents(t, f.take(t, 1), `removed 4 v9`)
	sameAsStore(t, c, f.mirror, nil)
}

// TestFollowTag: a tag's follower holds the plants with the tag: one
// updated into it is Added, one updated out of it or deleted Removed, and
// the changes of other plants never reach it.
func TestFollowTag(t *testing.T) {
	store := memstore.New()
	green, red := plant.StringPtr("green"), plant.StringPtr("red")
	write(t, store, func(ctx context.Context, s *memstore.Store) error {
		_, err := s.Create(ctx, plant.Plant{ID: 1, Name: "fern", Tag: green})
		return err
	}, func(ctx context.Context, s *memstore.Store) error {
		_, err := s.Create(ctx, plant.Plant{ID: 2, Name: "ivy", Tag: red})
		return err
	})
	srv := newFeedServer(t, store, nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := startFollow(t, c, FollowOptions{Tag: green, Wait: 2 * time.Second})
	wantEvents(t, f.take(t, 2), `added 1 "fern" tag "green" v2`, "in sync")

	write(t, store, replace(2, "ivy", green), replace(1, "fern", red), create(3, "moss"),
		replace(2, "ivy 2", green), remove(3), remove(2), replace(1, "fern", green))
	wantEvents(t, f.take(t, 5),
		`added 2 "ivy" tag "green" v3`, `removed 1 v4`, `changed 2 "ivy 2" tag "green" v6`, `removed 2 v8`, `added 1 "fern" tag "green" v9`)
	sameAsStore(t, c, f.mirror, green)
}

// TestFollowEndsOnARefusal: a refusal that is not a gone cursor (here a
// bad filter) ends Follow with the server's *Error, after no event.
func TestFollowEndsOnARefusal(t *testing.T) {
	store := memstore.New()
	write(t, store, create(1, "fern"))
	srv := newFeedServer(t, store, nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var errs []error
	for ev, err := range c.Follow(context.Background(), FollowOptions{Types: []string{"plant.eaten"}}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, describe(ev))
	}
	var apiErr *Error
	wantEvents(t, got, `added 1 "fern" untagged v0`, "in sync")
	if len(errs) != 1 || !errors.As(errs[0], &apiErr) || apiErr.Status != 400 {
		t.Fatalf("errors %v, want one 400", errs)
	}
	if apiErr.Message != `query parameter "types" must list event types from plant.created, plant.updated, plant.deleted, comma-separated, not "plant.eaten"` {
		t.Fatalf("message %q", apiErr.Message)
	}
}

// TestFollowListsWhenTheTypesLeaveOutCreates: a snapshot gives its plants
// as plant.created, so a follower of other types lists the plants instead
// (they carry no version) and follows from the listing's cursor.
func TestFollowListsWhenTheTypesLeaveOutCreates(t *testing.T) {
	store := memstore.New()
	write(t, store, create(1, "fern"), create(2, "ivy"))
	srv := newFeedServer(t, store, nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f := startFollow(t, c, FollowOptions{Types: []string{PlantUpdated, PlantDeleted}, Wait: 2 * time.Second})
	wantEvents(t, f.take(t, 3), `added 1 "fern" untagged v0`, `added 2 "ivy" untagged v0`, "in sync")
	write(t, store, create(3, "moss"), remove(1))
	wantEvents(t, f.take(t, 1), `removed 1 v4`)
}

// TestFollowSnapshotOfManyPages: a snapshot of more plants than a page,
// read while a writer changes plants already given and plants still to
// come, ends with a copy equal to the store, and each plant's versions
// increase as Follow hands them over.
func TestFollowSnapshotOfManyPages(t *testing.T) {
	store := memstore.New()
	for id := range int64(40) {
		write(t, store, create(id, "seed"))
	}
	srv := newFeedServer(t, store, nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := int64(i*7) % 40
			_ = store.Replace(context.Background(), plant.Plant{ID: id, Name: fmt.Sprintf("w%d", i)}, nil)
			time.Sleep(100 * time.Microsecond)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mirror, versions := map[int64]Plant{}, map[int64]int64{}
	synced := false
	for ev, err := range c.Follow(ctx, FollowOptions{Limit: 3, Wait: time.Second}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == InSync {
			if synced {
				t.Fatal("a second InSync with no start over due")
			}
			synced = true
			close(stop)
			<-done
			write(t, store, create(1000, "last")) // the end of the changes to follow
			continue
		}
		if v, ok := versions[ev.Plant.ID]; ok && ev.Version <= v {
			t.Fatalf("%s after version %d", describe(ev), v)
		}
		versions[ev.Plant.ID] = ev.Version
		mirror[ev.Plant.ID] = ev.Plant
		if ev.Plant.ID == 1000 {
			break
		}
	}
	sameAsStore(t, c, mirror, nil)
}
