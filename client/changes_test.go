package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newFeedServer serves the real plants routes, the change feed following
// store's log, on loopback. Its read and write timeouts are far shorter
// than a long poll's wait, as a server's are (30 s and 40 s against up to
// 60 s): the feed must outlast them. front, unless nil, sees each request
// first.
func newFeedServer(t *testing.T, store *memstore.Store, front func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	h, err := plants.NewHandlers(store, store, plants.DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	rt := httpserver.NewRouter(append(h.Routes(), plants.NewFeed(store, nil, zap.NewNop()).Routes()...))
	api := rt.Resolve(rt.Dispatch())
	if front != nil {
		api = front(api)
	}
	srv := httptest.NewUnstartedServer(api)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// wantChanges is what the feed should give after cursor: the store's own
// log, as the API writes it (times to the millisecond, in UTC).
func wantChanges(t *testing.T, store *memstore.Store, after changes.Cursor) []Change {
	t.Helper()
	records, err := store.Changes(context.Background(), after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Change, len(records))
	for i, rec := range records {
		out[i] = Change{Cursor: plants.EncodeCursor(rec.Cursor), Type: rec.Kind.String(), ID: rec.Plant.ID,
			Version: rec.Version, Time: rec.At.UTC().Truncate(time.Millisecond)}
		if rec.Kind != changes.Deleted {
			out[i].Plant = &Plant{ID: rec.Plant.ID, Name: rec.Plant.Name, Tag: rec.Plant.Tag}
		}
	}
	return out
}

// take pulls n changes from next, failing on an error.
func take(t *testing.T, next func() (Change, error, bool), n int) []Change {
	t.Helper()
	var got []Change
	for range n {
		ch, err, ok := next()
		if err != nil || !ok {
			t.Fatalf("after %d changes: %v (iterating: %v)", len(got), err, ok)
		}
		got = append(got, ch)
	}
	return got
}

func sameChanges(t *testing.T, got, want []Change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d changes, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Cursor != w.Cursor || g.Type != w.Type || g.ID != w.ID || g.Version != w.Version || !g.Time.Equal(w.Time) || showPlant(g.Plant) != showPlant(w.Plant) {
			t.Fatalf("change %d = %+v %s, want %+v %s", i, g, showPlant(g.Plant), w, showPlant(w.Plant))
		}
	}
}

func showPlant(p *Plant) string {
	if p == nil {
		return "no plant"
	}
	if p.Tag == nil {
		return fmt.Sprintf("%d %q untagged", p.ID, p.Name)
	}
	return fmt.Sprintf("%d %q tag %q", p.ID, p.Name, *p.Tag)
}

// write makes the writes in order, reporting a failure (from any
// goroutine).
func write(t *testing.T, store *memstore.Store, writes ...func(context.Context, *memstore.Store) error) {
	t.Helper()
	for _, w := range writes {
		if err := w(context.Background(), store); err != nil {
			t.Error(err)
			return
		}
	}
}

func create(id int64, name string) func(context.Context, *memstore.Store) error {
	return func(ctx context.Context, s *memstore.Store) error {
		_, err := s.Create(ctx, plant.Plant{ID: id, Name: name})
		return err
	}
}

// TestChangesFollowsTheFeed: a follower that lists, then follows from the
// listing's cursor, gets each later change once, in commit order, through
// long polls that outlast the server's timeouts.
func TestChangesFollowsTheFeed(t *testing.T) {
	store := memstore.New()
	write(t, store, create(1, "fern"), create(2, "ivy"))
	srv := newFeedServer(t, store, nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.List(context.Background(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Plants) != 2 || page.ChangesCursor != plants.EncodeCursor(changes.Cursor{History: store.History(), Version: 2}) {
		t.Fatalf("listing: %d plants, cursor %q", len(page.Plants), page.ChangesCursor)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next, stop := iter.Pull2(c.Changes(ctx, page.ChangesCursor, ChangesOptions{Wait: time.Second}))
	defer stop()

	// Written after the follower's first long poll has begun or before:
	// either way each change comes once, in order.
	go write(t, store, create(3, "moss"), func(ctx context.Context, s *memstore.Store) error {
		return s.Replace(ctx, plant.Plant{ID: 1, Name: "fern", Tag: plant.StringPtr("shade")}, nil)
	}, func(ctx context.Context, s *memstore.Store) error { return s.Delete(ctx, 2) })
	got := take(t, next, 3)
	sameChanges(t, got, wantChanges(t, store, changes.Cursor{History: store.History(), Version: 2}))

	// From "": every change kept.
	next2, stop2 := iter.Pull2(c.Changes(ctx, "", ChangesOptions{Limit: 2}))
	defer stop2()
	sameChanges(t, take(t, next2, 5), wantChanges(t, store, changes.Cursor{}))

	// A long poll with nothing to give, past the server's timeouts, then a
	// change.
	time.AfterFunc(300*time.Millisecond, func() { _, _ = store.Create(context.Background(), plant.Plant{ID: 4, Name: "late"}) })
	got = take(t, next, 1)
	if got[0].ID != 4 || got[0].Type != PlantCreated || got[0].Version != 6 {
		t.Fatalf("the change after a wait: %+v", got[0])
	}
	cancel()
	if _, err, ok := next(); !ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("after the context ended: %v (iterating %v), want context.Canceled", err, ok)
	}
	if _, _, ok := next(); ok {
		t.Fatal("the iteration went on after yielding the context's error")
	}
}

// TestChangesResumesAfterFailures: failures that may pass (503 with
// Retry-After, 500, 429, a connection cut) are retried from the same
// cursor until the feed answers; no change is lost or repeated.
func TestChangesResumesAfterFailures(t *testing.T) {
	store := memstore.New()
	write(t, store, create(1, "a"), create(2, "b"), create(3, "c"))
	var requests atomic.Int32
	srv := newFeedServer(t, store, func(api http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch requests.Add(1) {
			case 1:
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusServiceUnavailable)
			case 2:
				w.WriteHeader(http.StatusInternalServerError)
			case 4: // after the first page
				w.WriteHeader(http.StatusTooManyRequests)
			case 5:
				panic(http.ErrAbortHandler) // the connection is cut
			default:
				api.ServeHTTP(w, r)
			}
		})
	})
	c, err := New(srv.URL, WithRetries(0, time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(c.Changes(context.Background(), "", ChangesOptions{Limit: 2, Wait: time.Second, MaxBackoff: 10 * time.Millisecond}))
	defer stop()
	sameChanges(t, take(t, next, 3), wantChanges(t, store, changes.Cursor{}))
	if n := requests.Load(); n != 6 {
		t.Fatalf("%d requests, want 6: two failures, a page, two failures, a page", n)
	}
}

// TestChangesCursorGone: once the log is pruned past a follower's cursor,
// the iteration ends with ErrCursorGone; the follower lists again and
// follows from the listing's cursor.
func TestChangesCursorGone(t *testing.T) {
	store := memstore.New()
	write(t, store, create(1, "a"), create(2, "b"))
	if _, err := store.PruneChanges(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	srv := newFeedServer(t, store, nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for ch, err := range c.Changes(context.Background(), "", ChangesOptions{}) {
		if err == nil {
			t.Fatalf("a change from a pruned log: %+v", ch)
		}
		errs = append(errs, err)
	}
	var apiErr *Error
	if len(errs) != 1 || !errors.Is(errs[0], ErrCursorGone) || !errors.As(errs[0], &apiErr) || apiErr.Status != http.StatusGone ||
		apiErr.Message != "the cursor is older than the change log's retention window: list the plants again (GET /plants) and follow the changes from the listing's Plantstore-Changes-Cursor header" {
		t.Fatalf("errors %v, want one ErrCursorGone with the server's message", errs)
	}
	page, err := c.List(context.Background(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, store, create(3, "c"))
	next, stop := iter.Pull2(c.Changes(context.Background(), page.ChangesCursor, ChangesOptions{}))
	defer stop()
	sameChanges(t, take(t, next, 1), wantChanges(t, store, changes.Cursor{History: store.History(), Version: 2}))
}

// TestChangesEndsOnARefusal: an answer that asking again cannot change (a
// cursor the server never gave) ends the iteration with its error.
func TestChangesEndsOnARefusal(t *testing.T) {
	srv := newFeedServer(t, memstore.New(), nil)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, err := range c.Changes(context.Background(), "not-a-cursor", ChangesOptions{}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrBadRequest) {
		t.Fatalf("errors %v, want one ErrBadRequest", errs)
	}
}
