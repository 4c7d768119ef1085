package webhooks

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// inProcessReceiver answers the dispatcher's attempts in the attempt's own
// goroutine, through the sender's http.Client: a synctest bubble cannot
// wait on sockets. It records when each attempt came (the bubble's clock)
// and what it answered.
type inProcessReceiver struct {
	mu       sync.Mutex
	status   int
	attempts []receivedAttempt
}

type receivedAttempt struct {
	at     time.Time
	id     string
	status int
}

func (r *inProcessReceiver) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	status := r.status
	r.attempts = append(r.attempts, receivedAttempt{at: time.Now(), id: req.Header.Get(HeaderID), status: status})
	r.mu.Unlock()
	w := httptest.NewRecorder()
	w.WriteHeader(status)
	return w.Result(), nil
}

func (r *inProcessReceiver) answer(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

func (r *inProcessReceiver) received() []receivedAttempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedAttempt(nil), r.attempts...)
}

// startInProcess runs a dispatcher as cfg and opts say, over a real bolt
// store, with one endpoint, "crm", whose attempts receiver answers; both
// stop at the test's end. Call it inside synctest.Test.
func startInProcess(t *testing.T, cfg Config, receiver *inProcessReceiver, opts ...Option) (*boltstore.Store, *Metrics) {
	t.Helper()
	store, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	secret, err := ParseSecret(webhookstest.NewSecret())
	if err != nil {
		t.Fatal(err)
	}
	box := store.Outbox()
	ep := Endpoint{Name: "crm", URL: "https://crm.example/hooks", Secrets: []Secret{secret}}
	d := NewDispatcher(cfg, box, File{Endpoints: []Endpoint{ep}}, metrics, tracenoop.NewTracerProvider(), zap.NewNop(), opts...)
	d.poster.client.Transport = receiver
	Hook(box, d)
	if err := store.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Stop(context.Background())
		_ = store.Close()
	})
	// The loops' first claims, at their start, find nothing: a test's
	// creates come after them, whatever the machine's load (a first claim
	// that ran late would take some of them before the first poll).
	synctest.Wait()
	return store, metrics
}

// flagDefaults is the dispatcher's configuration as the program's flags
// leave it by default: the production schedule, concurrency and polling.
func flagDefaults() Config {
	var cfg Config
	cfg.RegisterFlags(flag.NewFlagSet("plantstore", flag.ContinueOnError))
	return cfg
}

// createFerns creates plants 1 to n, each writing its event.
func createFerns(t *testing.T, store *boltstore.Store, n int) {
	t.Helper()
	for id := range int64(n) {
		createFern(t, store, id+1)
	}
}

// createFern creates plant id, writing its event.
func createFern(t *testing.T, store *boltstore.Store, id int64) {
	t.Helper()
	if res, err := store.Create(context.Background(), plant.Plant{ID: id, Name: "fern"}); err != nil || res != plant.Created {
		t.Fatalf("Create(%d) = %v, %v", id, res, err)
	}
}
