package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// handlerTransport answers each request with the API's handler in the
// process. Under testing/synctest a request over a real connection would
// stop the bubble's clock (a goroutine in a network read is not durably
// blocked); the handler, the store and its pruner are the real ones.
type handlerTransport struct{ api http.Handler }

func (h handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, req)
	return w.Result(), nil
}

// retainedStore is a started store whose own pruner prunes its change log
// with the smallest retention the server accepts (--changes-retention=1m).
type retainedStore struct {
	plants plant.Store
	log    changes.ChangeLog
}

var retainedStores = map[string]func(t *testing.T) retainedStore{
	"memory": func(t *testing.T) retainedStore {
		s := memstore.NewWithOptions(memstore.Options{ChangesRetention: time.Minute})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return retainedStore{s, s}
	},
	"bolt": func(t *testing.T) retainedStore {
		s, err := boltstore.OpenConfig(boltstore.Config{DataDir: t.TempDir(), ChangesRetention: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return retainedStore{s, s.Changes()}
	},
}

// TestFollowStartsOverWhenTheRetentionTookItsCursor: on memory and bolt,
// with the retention at its minimum and the store's own pruner, a
// follower away for two minutes comes back to a gone cursor and Follow
// starts over by itself (the events after the prune come from a new
// snapshot, with its version, but for a removal, which the snapshot shows
// by a plant's absence and carries none); the caller, applying events and
// nothing else, ends with a copy equal to the store and keeps following.
func TestFollowStartsOverWhenTheRetentionTookItsCursor(t *testing.T) {
	for name, open := range retainedStores {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := open(t)
				h, err := plants.NewHandlers(store.plants, store.log, plants.DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
				if err != nil {
					t.Fatal(err)
				}
				rt := httpserver.NewRouter(append(h.Routes(), plants.NewFeed(store.log, nil, zap.NewNop()).Routes()...))
				c, err := New("http://plantstore.test", WithHTTPClient(&http.Client{Transport: handlerTransport{rt.Resolve(rt.Dispatch())}}))
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				do := func(ops ...func() error) {
					t.Helper()
					for _, op := range ops {
						if err := op(); err != nil {
							t.Fatal(err)
						}
					}
				}
				create := func(id int64, name string) func() error {
					return func() error { _, err := store.plants.Create(ctx, plant.Plant{ID: id, Name: name}); return err }
				}
				update := func(id int64, name, tag string) func() error {
					return func() error { return store.plants.Replace(ctx, plant.Plant{ID: id, Name: name, Tag: &tag}, nil) }
				}
				remove := func(id int64) func() error { return func() error { return store.plants.Delete(ctx, id) } }
				// A removal found by a start over carries no version; the
				// snapshot's and the feed's events carry one.
				take := func(f *follower, n int) []string {
					t.Helper()
					got := f.take(t, n)
					for i, ev := range got {
						if v := strings.LastIndex(ev, " v"); v >= 0 && ev[v:] == " v0" {
							got[i] = ev[:v] + " (no version)"
						} else if v >= 0 {
							got[i] = ev[:v] + " (versioned)"
						}
					}
					return got
				}

				do(create(1, "fern"), create(2, "ivy"), create(3, "moss"))
				f := startFollow(t, c, FollowOptions{Wait: 30 * time.Second})
				wantEvents(t, take(f, 4), `added 1 "fern" untagged (versioned)`, `added 2 "ivy" untagged (versioned)`, `added 3 "moss" untagged (versioned)`, "in sync")
				do(update(3, "moss", "shade"))
				wantEvents(t, take(f, 1), `changed 3 "moss" tag "shade" (versioned)`)

				// Away for twice the retention, while the plants change.
				do(remove(2), update(1, "fern", "sun"), create(4, "sage"))
				time.Sleep(2 * time.Minute)
				do(create(5, "rue"))
				wantEvents(t, take(f, 5), `removed 2 (no version)`, `changed 1 "fern" tag "sun" (versioned)`,
					`added 4 "sage" untagged (versioned)`, `added 5 "rue" untagged (versioned)`, "in sync")
				sameAsStore(t, c, f.mirror, nil)

				do(remove(4))
				wantEvents(t, take(f, 1), `removed 4 (versioned)`)
				sameAsStore(t, c, f.mirror, nil)
			})
		})
	}
}
