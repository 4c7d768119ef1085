package webhooks

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// startPostgresSender is a real postgres store hooked to a running
// dispatcher. Its poll interval is an hour: past the claim at start, only
// a handoff (or a claim under a backlog) can bring an event to a receiver.
func startPostgresSender(t *testing.T, cfg Config, eps ...Endpoint) (*pgstore.Store, *Dispatcher) {
	t.Helper()
	s, err := pgstore.Open(ctx, pgstore.Config{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg.PollInterval = time.Hour
	box := s.Outbox()
	claims := &claimCounter{Outbox: box}
	d := NewDispatcher(cfg, claims, File{Endpoints: eps}, metrics, tracenoop.NewTracerProvider(), zap.NewNop())
	Hook(box, d)
	if err := s.Start(ctx); err != nil { // before the dispatcher, as the program's hooks run
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The loops' first claim, which would take a row written due later
	// if its query ran late, is done before the test creates anything.
	for _, ep := range eps {
		claims.waitForFirst(t, ep.Name)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = d.Stop(stop)
		_ = s.Close()
	})
	return s, d
}

// claimCounter is an outbox that counts the claims each endpoint ran.
type claimCounter struct {
	outbox.Outbox
	mu     sync.Mutex
	claims map[string]int
}

func (c *claimCounter) Claim(ctx context.Context, endpoint string, n int, lease time.Duration) ([]outbox.Delivery, error) {
	batch, err := c.Outbox.Claim(ctx, endpoint, n, lease)
	if err == nil {
		c.mu.Lock()
		if c.claims == nil {
			c.claims = map[string]int{}
		}
		c.claims[endpoint]++
		c.mu.Unlock()
	}
	return batch, err
}

// of is how many claims endpoint ran.
func (c *claimCounter) of(endpoint string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims[endpoint]
}

// waitForFirst waits until endpoint's loop has made the claim it makes at
// start: a row written after it is found by a later claim only. It polls
// every millisecond for up to 20 s: the loop claims from a store on disk
// or a database, with receivers on real sockets, which a synctest bubble
// cannot wait on.
func (c *claimCounter) waitForFirst(t *testing.T, endpoint string) {
	t.Helper()
	poll.Wait(t, time.Millisecond, 20*time.Second, "the first claim for "+endpoint, func() (bool, error) { return c.of(endpoint) != 0, nil })
}

// attemptsOfRows counts the outbox's rows still to deliver by their
// attempts column: 1 for a row written claimed (a handoff), 0 for one
// written due. Delivered rows are kept for a replay, and not counted.
func attemptsOfRows(t *testing.T, s *pgstore.Store) map[int]int {
	t.Helper()
	rows, err := s.Pool().Query(ctx, `SELECT attempts, count(*) FROM webhook_deliveries WHERE delivered_at IS NULL GROUP BY attempts`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	var attempts, n int
	if _, err := pgx.ForEachRow(rows, []any{&attempts, &n}, func() error { got[attempts] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// A create on postgres hands its events to the dispatcher: they reach the
// receiver at once, with no poll, as attempt 1 of rows written claimed,
// and are settled once delivered.
func TestPostgresCreatesHandTheirEventsToTheDispatcher(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	cfg := testConfig()
	cfg.Concurrency = 16 // room for all 10, however slowly they are sent
	s, _ := startPostgresSender(t, cfg, endpoint(t, "crm", r.URL, secret))
	for i := range 10 {
		if res, err := s.Create(ctx, plant.Plant{ID: int64(i), Name: "p"}); res != plant.Created || err != nil {
			t.Fatalf("Create = %v, %v", res, err)
		}
	}
	waitFor(t, r, "the 10 events, with no poll", func([]webhookstest.Request) bool { return len(r.Delivered()) == 10 })
	for _, req := range r.Requests() {
		if !req.Verified {
			t.Errorf("request %s did not verify", req.ID)
		}
	}
	poll.Wait(t, 10*time.Millisecond, 20*time.Second, "no rows left to deliver after delivery", func() (bool, error) {
		rows := attemptsOfRows(t, s)
		return len(rows) == 0, fmt.Errorf("rows by attempts %v", rows)
	})
}

// Handoffs wait for at most the endpoint's concurrency of slots: past that
// room, rows are written due, for the claims. A stop gives back both the
// attempt it cuts off and the handoff still waiting, due at once.
func TestHandoffsAreBoundedAndGivenBackAtTheStop(t *testing.T) {
	secret := webhookstest.NewSecret()
	r, release := heldReceiver(t, secret)
	defer release()
	cfg := testConfig()
	cfg.Concurrency = 1
	cfg.Timeout = time.Minute
	s, d := startPostgresSender(t, cfg, endpoint(t, "crm", r.URL, secret))
	create := func(id int64) {
		t.Helper()
		if res, err := s.Create(ctx, plant.Plant{ID: id, Name: "p"}); res != plant.Created || err != nil {
			t.Fatalf("Create = %v, %v", res, err)
		}
	}
	create(1)
	w := (*d.byName.Load())["crm"]
	poll.Wait(t, 5*time.Millisecond, 20*time.Second, "the first event in flight", func() (bool, error) { return len(w.slots) != 0 && w.reserved.Load() == 0, nil })
	for id := range int64(4) {
		create(2 + id)
	}
	// One in flight, one waiting for the slot; three written due.
	if got := attemptsOfRows(t, s); got[1] != 2 || got[0] != 3 || len(got) != 2 {
		t.Fatalf("rows by attempts = %v, want 2 written claimed and 3 due", got)
	}

	stop, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := d.Stop(stop); err != nil {
		t.Fatal(err)
	}
	claimed, err := d.box.Claim(ctx, "crm", 10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	byAttempt := map[int]int{}
	for _, dl := range claimed {
		byAttempt[dl.Attempt]++
	}
	if len(claimed) != 5 || byAttempt[2] != 2 || byAttempt[1] != 3 {
		t.Fatalf("after the stop claimed %d by attempt %v, want all 5 due: the 2 handoffs as attempt 2", len(claimed), byAttempt)
	}
}
