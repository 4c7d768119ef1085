package plants

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// BenchmarkCreateWithFollowers measures what the change feed costs the
// writers: creates on the memory store with no follower, and with ten
// followers long-polling the feed through its handler (each woken by every
// commit, reading what it missed, and waiting again). A follower that waits
// holds no lock, so the difference is the followers' reads when they wake
// (the store's read lock, and the CPU they share with the writer).
func BenchmarkCreateWithFollowers(b *testing.B) {
	for _, followers := range []int{0, 10} {
		b.Run("followers="+strconv.Itoa(followers), func(b *testing.B) {
			store := memstore.New()
			api := newFeedAPI(b, store, store, nil)
			ctx, stop := context.WithCancel(context.Background())
			var running sync.WaitGroup
			var seen atomic.Int64 // changes the followers read
			for range followers {
				running.Go(func() { follow(ctx, api, &seen) })
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
			if followers > 0 {
				b.ReportMetric(float64(seen.Load())/float64(followers)/float64(b.N), "changes-seen/follower/op")
			}
		})
	}
}

// follow long-polls the feed until ctx ends, counting the changes it reads.
func follow(ctx context.Context, api http.Handler, seen *atomic.Int64) {
	after := EncodeCursor(outbox.Cursor{})
	for ctx.Err() == nil {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/plants/changes?limit=1000&wait=60s&after="+after, nil))
		if w.Code != http.StatusOK {
			return // the context ended (499)
		}
		var page struct {
			Changes []json.RawMessage `json:"changes"`
			Next    string            `json:"next"`
		}
		if json.Unmarshal(w.Body.Bytes(), &page) != nil {
			return
		}
		seen.Add(int64(len(page.Changes)))
		after = page.Next
	}
}
