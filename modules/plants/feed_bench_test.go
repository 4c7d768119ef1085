package plants

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// BenchmarkCreateWithFollowers measures what the change feed costs the
// writers: creates on the memory store with no follower; with ten waiters
// (goroutines blocked on the log's Wait, as a long poll is, which wake at
// each commit and wait again without reading: the writer's own added work,
// waking them); and with ten followers long-polling the feed through its
// handler (each woken by a commit, reading what it missed, and asking
// again), which adds their reads (the store's lock, and the CPU they share
// with the writer).
func BenchmarkCreateWithFollowers(b *testing.B) {
	for _, bench := range []struct {
		name      string
		followers int
		follow    func(ctx context.Context, store *memstore.Store, api http.Handler, seen *atomic.Int64)
	}{
		{"followers=0", 0, nil},
		{"waiters=10", 10, func(ctx context.Context, store *memstore.Store, _ http.Handler, _ *atomic.Int64) { wait(ctx, store) }},
		{"followers=10", 10, func(ctx context.Context, _ *memstore.Store, api http.Handler, seen *atomic.Int64) {
			follow(ctx, api, seen)
		}},
	} {
		b.Run(bench.name, func(b *testing.B) {
			store := memstore.New()
			api := newFeedAPI(b, store, store, nil)
			ctx, stop := context.WithCancel(context.Background())
			var running sync.WaitGroup
			var seen atomic.Int64 // changes the followers read
			for range bench.followers {
				running.Go(func() { bench.follow(ctx, store, api, &seen) })
			}
			p := plant.Plant{Name: "benchmark plant", Tag: plant.StringPtr("bench")}
			b.ReportAllocs()
			for b.Loop() {
				p.ID++
				if _, err := store.Create(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			stop()
			running.Wait()
			if n := seen.Load(); n > 0 {
				b.ReportMetric(float64(n)/float64(bench.followers)/float64(b.N), "changes-seen/follower/op")
			}
		})
	}
}

// wait waits on the log's next commit, again and again, until ctx ends.
func wait(ctx context.Context, store *memstore.Store) {
	for {
		select {
		case <-store.Wait():
		case <-ctx.Done():
			return
		}
	}
}

// follow long-polls the feed until ctx ends, counting the changes it reads.
// It reads the page as cheaply as it can (the server's work is what is
// measured): the changes counted by their cursors, next cut from the end.
func follow(ctx context.Context, api http.Handler, seen *atomic.Int64) {
	after := EncodeCursor(changes.Cursor{})
	for ctx.Err() == nil {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/plants/changes?limit=1000&wait=60s&after="+after, nil))
		body := w.Body.Bytes()
		if w.Code != http.StatusOK || len(body) < len(`"}`)+cursorTextLen {
			return // the context ended (499)
		}
		seen.Add(int64(bytes.Count(body, []byte(`{"cursor":`))))
		after = string(body[len(body)-len(`"}`)-cursorTextLen : len(body)-len(`"}`)])
	}
}
