package webhooks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// replayOutbox is an outbox whose Replay records its calls and answers as
// the test says; nothing else of it is used.
type replayOutbox struct {
	outbox.Outbox
	mu     sync.Mutex
	calls  []replayCall
	answer func() (int, error)
}

type replayCall struct {
	endpoint string
	since    time.Time
	limit    int
}

func (o *replayOutbox) Replay(_ context.Context, endpoint string, since time.Time, limit int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, replayCall{endpoint, since, limit})
	return o.answer()
}

// adminServer serves d's admin routes on loopback.
func adminServer(t *testing.T, d *Dispatcher, box outbox.Outbox) *httptest.Server {
	t.Helper()
	admin := mux.NewRouter()
	for _, route := range AdminRoutes(&Service{Outbox: box, Dispatcher: d}, zap.NewNop()) {
		admin.Handle(route.Path, route.Handler).Methods(route.Method)
	}
	srv := httptest.NewServer(admin)
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// The replay route passes the endpoint, since (the zero time, every
// delivered event still kept, unless given) and limit (1000 unless given)
// to the outbox and answers how many it replayed; a bad since or
// limit is a 400 and an endpoint not in the file a 404, neither reaching
// the outbox; an outbox that fails is a 503.
func TestTheReplayRouteAnswersExactly(t *testing.T) {
	box := &replayOutbox{answer: func() (int, error) { return 3, nil }}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	crm := endpoint(t, "crm", "https://crm.example", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	d := NewDispatcher(testConfig(), box, File{Endpoints: []Endpoint{crm}}, metrics, tracenoop.NewTracerProvider(), zap.NewNop())
	srv := adminServer(t, d, box)
	since := time.Date(2026, 11, 25, 19, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		query  string
		status int
		body   string
		call   *replayCall
	}{
		{"?since=2026-11-25T19:00:00Z", 200, `{"endpoint":"crm","replayed":3}`, &replayCall{"crm", since, 1000}},
		{"?since=2026-11-25T20:00:00.5%2B01:00&limit=10000", 200, `{"endpoint":"crm","replayed":3}`, &replayCall{"crm", since.Add(500 * time.Millisecond), 10000}},
		{"?since=2026-11-25T19:00:00Z&limit=1", 200, `{"endpoint":"crm","replayed":3}`, &replayCall{"crm", since, 1}},
		{"", 200, `{"endpoint":"crm","replayed":3}`, &replayCall{"crm", time.Time{}, 1000}},
		{"?since=", 200, `{"endpoint":"crm","replayed":3}`, &replayCall{"crm", time.Time{}, 1000}},
		{"?limit=5", 200, `{"endpoint":"crm","replayed":3}`, &replayCall{"crm", time.Time{}, 5}},
		{"?since=yesterday", 400, `{"error":400,"message":"since must be an RFC 3339 time, such as 2026-11-25T19:00:00Z: the events committed from then on are sent again (without since, every delivered event still kept)"}`, nil},
		{"?since=2026-11-25T19:00:00Z&limit=10001", 400, `{"error":400,"message":"limit must be a whole number from 1 to 10000"}`, nil},
		{"?since=2026-11-25T19:00:00Z&limit=0", 400, `{"error":400,"message":"limit must be a whole number from 1 to 10000"}`, nil},
		{"?since=2026-11-25T19:00:00Z&limit=010", 400, `{"error":400,"message":"limit must be a whole number from 1 to 10000"}`, nil},
		{"?since=2026-11-25T19:00:00Z&since=2026-11-26T19:00:00Z", 400, `{"error":400,"message":"query parameter \"since\" is given 2 times; give it at most once"}`, nil},
		{"?since=2026-11-25T19:00:00Z&limit=5&limit=6", 400, `{"error":400,"message":"query parameter \"limit\" is given 2 times; give it at most once"}`, nil},
		{"?since=2026-11-25T19:00:00Z&limit=", 200, `{"endpoint":"crm","replayed":3}`, &replayCall{"crm", since, 1000}},
	} {
		box.calls = nil
		status, ct, body := post(t, srv.URL+"/webhooks/endpoints/crm/replay"+c.query)
		if status != c.status || body != c.body || ct != "application/json" {
			t.Errorf("POST replay%s = %d %q %s, want %d %s", c.query, status, ct, body, c.status, c.body)
		}
		switch {
		case c.call == nil && len(box.calls) != 0:
			t.Errorf("POST replay%s reached the outbox: %+v", c.query, box.calls)
		case c.call != nil && (len(box.calls) != 1 || box.calls[0].endpoint != c.call.endpoint ||
			!box.calls[0].since.Equal(c.call.since) || box.calls[0].limit != c.call.limit):
			t.Errorf("POST replay%s called Replay %+v, want once with %+v", c.query, box.calls, *c.call)
		}
	}

	box.calls = nil
	status, _, body := post(t, srv.URL+"/webhooks/endpoints/other/replay?since=2026-11-25T19:00:00Z")
	if want := `{"error":404,"message":"no endpoint \"other\" in the webhooks file"}`; status != http.StatusNotFound || body != want || len(box.calls) != 0 {
		t.Errorf("replay of an endpoint not in the file = %d %s (outbox calls %d), want 404 %s", status, body, len(box.calls), want)
	}
	box.answer = func() (int, error) { return 0, errors.New("disk on fire") }
	status, _, body = post(t, srv.URL+"/webhooks/endpoints/crm/replay?since=2026-11-25T19:00:00Z")
	if want := `{"error":503,"message":"the outbox cannot be written"}`; status != http.StatusServiceUnavailable || body != want {
		t.Errorf("replay on a failing outbox = %d %s, want 503 %s", status, body, want)
	}
}

// deadOutbox is an outbox whose DeadLetters answers letters; nothing else
// of it is used.
type deadOutbox struct {
	outbox.Outbox
	letters []outbox.DeadLetter
}

func (o *deadOutbox) DeadLetters(context.Context, string, int) ([]outbox.DeadLetter, error) {
	return o.letters, nil
}

// A dead letter is listed with the type and version of the change it
// announced: a deletion's data, {"id":N}, does not say it was one. A row
// filed before kinds were recorded announced a create.
func TestDeadLettersListTheirTypeAndVersion(t *testing.T) {
	created := time.Date(2026, 11, 25, 19, 42, 30, 0, time.UTC)
	died := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	box := &deadOutbox{letters: []outbox.DeadLetter{
		{ID: "msg_1", Endpoint: "crm", Kind: changes.Deleted, Version: 18, Body: []byte(`{"id":2}`),
			CreatedAt: created, DiedAt: died, Attempts: 8, LastError: "answered 500"},
		{ID: "msg_2", Endpoint: "crm", Kind: changes.Replaced, Version: 17, Body: []byte(`{"id":1,"name":"Monstera"}`),
			CreatedAt: created, DiedAt: died, Attempts: 8, LastError: "no answer within --webhooks-timeout"},
		{ID: "msg_3", Endpoint: "crm", Body: []byte(`{"id":3,"name":"old"}`), CreatedAt: created, DiedAt: died, Attempts: 8, LastError: "answered 500"},
	}}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	crm := endpoint(t, "crm", "https://crm.example", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	d := NewDispatcher(testConfig(), box, File{Endpoints: []Endpoint{crm}}, metrics, tracenoop.NewTracerProvider(), zap.NewNop())
	srv := adminServer(t, d, box)
	resp, err := http.Get(srv.URL + DeadLettersPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"id":"msg_1","endpoint":"crm","type":"plant.deleted","version":18,"created_at":"2026-11-25T19:42:30Z","dead_lettered_at":"2026-11-26T22:00:00Z","attempts":8,"last_error":"answered 500","event":{"id":2}},` +
		`{"id":"msg_2","endpoint":"crm","type":"plant.updated","version":17,"created_at":"2026-11-25T19:42:30Z","dead_lettered_at":"2026-11-26T22:00:00Z","attempts":8,"last_error":"no answer within --webhooks-timeout","event":{"id":1,"name":"Monstera"}},` +
		`{"id":"msg_3","endpoint":"crm","type":"plant.created","version":0,"created_at":"2026-11-25T19:42:30Z","dead_lettered_at":"2026-11-26T22:00:00Z","attempts":8,"last_error":"answered 500","event":{"id":3,"name":"old"}}]`
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || string(body) != want {
		t.Errorf("GET dead letters = %d %q\n%s\nwant 200 application/json\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
	}
}
