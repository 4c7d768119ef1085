package plants

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// prunedStore is a store whose change log its own pruner prunes, started,
// with the smallest retention the server accepts.
type prunedStore struct {
	plants plant.Store
	log    changes.ChangeLog
}

// prunedStores open the stores whose pruning is time-driven in the
// process, inside a test's bubble (testing/synctest): memory and bolt. (On
// postgres the changes are aged in the database instead:
// cmd/plantstore's feed_retention_test.go.)
var prunedStores = map[string]func(t *testing.T) prunedStore{
	"memory": func(t *testing.T) prunedStore {
		s := memstore.NewWithOptions(memstore.Options{ChangesRetention: minChangesRetention})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return prunedStore{s, s}
	},
	"bolt": func(t *testing.T) prunedStore {
		s, err := boltstore.OpenConfig(boltstore.Config{DataDir: t.TempDir(), ChangesRetention: minChangesRetention})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return prunedStore{s, s.Changes()}
	},
}

// TestQuietFilterNeverFallsBehindTheRetention: for ten minutes, ten times
// the retention, a plant of another tag is created every 5 seconds while
// a follower whose filter matches none of them long-polls (30 s waits, as
// client.Follow does) and another holds a stream. Neither is ever
// answered 410 nor given a change: the long poll's next and the stream's
// bookmarks keep up with the head, every write of which the pruner
// removes a minute later. A follower that stops asking for two minutes is
// gone, as is the start, so the prunes did happen.
func TestQuietFilterNeverFallsBehindTheRetention(t *testing.T) {
	for name, open := range prunedStores {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := open(t)
				api := newFeedAPI(t, s.plants, s.log, nil)
				start := EncodeCursor(changesHead(t, s.log))

				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/plants/changes?tag=rose&after="+start, nil)
				req.Header.Set("Accept", eventStream)
				stream := &streamRecorder{rec: httptest.NewRecorder()}
				streamEnded := make(chan struct{})
				go func() {
					defer close(streamEnded)
					api.ServeHTTP(stream, req)
				}()

				const writes = 120
				written := make(chan struct{})
				go func() {
					defer close(written)
					for i := range writes {
						time.Sleep(5 * time.Second)
						if _, err := s.plants.Create(context.Background(), plant.Plant{ID: int64(i), Name: "fern", Tag: plant.StringPtr("fern")}); err != nil {
							t.Error(err)
							return
						}
					}
				}()

				polls, cursor := 0, start
				for {
					done := isClosed(written)
					w := <-longPoll(t.Context(), api, "/plants/changes?tag=rose&wait=30s&after="+cursor)
					var page struct {
						Changes []json.RawMessage `json:"changes"`
						Next    string            `json:"next"`
					}
					if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &page) != nil || len(page.Changes) != 0 {
						t.Fatalf("poll %d at %v: %d %s, want 200 and no change", polls, time.Now(), w.Code, w.Body)
					}
					polls, cursor = polls+1, page.Next
					if done {
						break
					}
				}
				head := EncodeCursor(changesHead(t, s.log))
				if cursor != head || polls < 20 {
					t.Fatalf("after %d long polls the follower's cursor is %s, the head %s", polls, cursor, head)
				}
				time.Sleep(changesHeartbeat)
				synctest.Wait()
				code, body, _ := stream.state()
				if isClosed(streamEnded) || code != http.StatusOK {
					t.Fatalf("the quiet stream ended (%d): %q", code, body)
				}
				events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
				last := "id: " + head + "\nevent: bookmark\ndata: {\"cursor\":\"" + head + "\"}"
				for i, ev := range events {
					if !strings.Contains(ev, "\nevent: bookmark\n") {
						t.Fatalf("the quiet stream's event %d is not a bookmark: %q", i, ev)
					}
				}
				if events[len(events)-1] != last {
					t.Fatalf("the quiet stream's last event is %q, want the head's bookmark %q", events[len(events)-1], last)
				}
				cancel()
				<-streamEnded

				// A follower that stops asking for longer than the retention
				// is gone; so is the start.
				time.Sleep(2 * time.Minute)
				if _, err := s.plants.Create(context.Background(), plant.Plant{ID: writes, Name: "fern"}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Minute)
				synctest.Wait()
				for _, after := range []string{cursor, start} {
					assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?tag=rose&after="+after), http.StatusGone, `{"error":410,"message":"`+goneMessage+`"}`)
				}
			})
		})
	}
}

// changesHead reads the log's head, failing t on an error.
func changesHead(t *testing.T, log changes.ChangeLog) changes.Cursor {
	t.Helper()
	c, err := log.Head(context.Background())
	if err != nil {
		t.Fatal(fmt.Errorf("head: %w", err))
	}
	return c
}
