package webhooks

import (
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// fakeChanges is a change log's Wait alone: commit closes the channel
// Wait gave and makes the next, as a store's commit does.
type fakeChanges struct {
	mu   sync.Mutex
	next chan struct{}
}

func newFakeChanges() *fakeChanges { return &fakeChanges{next: make(chan struct{})} }

func (c *fakeChanges) Wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

func (c *fakeChanges) commit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.next)
	c.next = make(chan struct{})
}

// waitForFirstClaims waits until every endpoint's loop has made the claim
// it makes at start: a row written after it is found by a later claim only.
func waitForFirstClaims(t *testing.T, s *testSender) {
	t.Helper()
	for name := range *s.d.byName.Load() {
		for deadline := time.Now().Add(20 * time.Second); s.claims.of(name) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no first claim for %s", name)
			}
		}
	}
}

// A change the store tells of is claimed at once: with an hour between
// polls, each event arrives because its commit woke the endpoint's loop.
func TestAChangeWakesTheEndpointsLoop(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	cfg := testConfig()
	cfg.PollInterval = time.Hour
	changes := newFakeChanges()
	s := startSenderWith(t, cfg, func(*boltstore.Store) []Option { return []Option{WakeOn(changes)} }, endpoint(t, "crm", r.URL, secret))
	waitForFirstClaims(t, s)
	for id := range int64(3) {
		s.create(t, plant.Plant{ID: id + 1, Name: "fern"})
		changes.commit()
		waitFor(t, r, "the event of the change told of, with no poll", func([]webhookstest.Request) bool { return len(r.Delivered()) == int(id+1) })
	}
	if n := len(r.Requests()); n != 3 {
		t.Fatalf("%d requests, want the 3 events once each", n)
	}
}
