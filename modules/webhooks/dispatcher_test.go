package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

var ctx = context.Background()

// testSender is a real bolt store hooked to a running dispatcher.
type testSender struct {
	store   *boltstore.Store
	box     *boltstore.Outbox
	d       *Dispatcher
	metrics *Metrics
	claims  *claimCounter // the dispatcher's claims, by endpoint
}

// testConfig compresses the retry schedule and the polling so that a test
// sees a day's worth of retries in milliseconds, and opens loopback and
// http to the test's receivers.
func testConfig() Config {
	return Config{AllowPrivate: true, AllowHTTP: true, Timeout: 5 * time.Second, Concurrency: 2,
		PollInterval: 10 * time.Millisecond, Retries: Schedule{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}}
}

func endpoint(t *testing.T, name, url string, secrets ...string) Endpoint {
	t.Helper()
	ep := Endpoint{Name: name, URL: url}
	for _, s := range secrets {
		parsed, err := ParseSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		ep.Secrets = append(ep.Secrets, parsed)
	}
	return ep
}

func startSender(t *testing.T, cfg Config, eps ...Endpoint) *testSender {
	t.Helper()
	return startSenderWith(t, cfg, nil, eps...)
}

// startSenderWith is startSender with the dispatcher's options, which
// options gives for the store.
func startSenderWith(t *testing.T, cfg Config, options func(*boltstore.Store) []Option, eps ...Endpoint) *testSender {
	t.Helper()
	store, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	box := store.Outbox()
	var opts []Option
	if options != nil {
		opts = options(store)
	}
	claims := &claimCounter{Outbox: box}
	d := NewDispatcher(cfg, claims, File{Endpoints: eps}, metrics, tracenoop.NewTracerProvider(), zap.NewNop(), opts...)
	Hook(box, d)
	if err := store.Start(ctx); err != nil { // before the dispatcher, as the program's hooks run
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = d.Stop(stop)
		_ = store.Close()
	})
	return &testSender{store: store, box: box, d: d, metrics: metrics, claims: claims}
}

func (s *testSender) create(t *testing.T, p plant.Plant) {
	t.Helper()
	res, err := s.store.Create(ctx, p)
	if err != nil || res != plant.Created {
		t.Fatalf("Create(%v) = %v, %v", p, res, err)
	}
}

// heldReceiver is a receiver that answers no request until release: its
// attempts stay in flight. Defer release, so that the held attempts end
// before the test's cleanups stop the sender.
func heldReceiver(t *testing.T, secret string) (r *webhookstest.Receiver, release func()) {
	r = webhookstest.NewReceiver(t, secret)
	hold := make(chan struct{})
	r.SetAnswer(func(webhookstest.Request, int) (int, http.Header) {
		<-hold
		return http.StatusOK, nil
	})
	return r, func() { close(hold) }
}

// statusReceiver is a receiver that answers every request with status
// until answer sets another.
func statusReceiver(t *testing.T, secret string, status int) (r *webhookstest.Receiver, answer func(status int)) {
	r = webhookstest.NewReceiver(t, secret)
	var mu sync.Mutex
	r.SetAnswer(func(webhookstest.Request, int) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		return status, nil
	})
	return r, func(s int) {
		mu.Lock()
		defer mu.Unlock()
		status = s
	}
}

// waitFor waits until cond holds after a request to r, failing after a
// bound that is not an expectation.
func waitFor(t *testing.T, r *webhookstest.Receiver, what string, cond func([]webhookstest.Request) bool) []webhookstest.Request {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		changed := r.Changed()
		if reqs := r.Requests(); cond(reqs) {
			return reqs
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("not within 20s: %s; requests %d", what, len(r.Requests()))
		}
	}
}

func TestAFailingReceiverGetsTheEventAgainWithTheSameID(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	r.SetAnswer(func(_ webhookstest.Request, n int) (int, http.Header) {
		if n <= 2 {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	s := startSender(t, testConfig(), endpoint(t, "crm", r.URL, secret))
	tag := "tropical <& \u00e9>"
	s.create(t, plant.Plant{ID: -9007199254740993, Name: "Monstera", Tag: &tag})

	reqs := waitFor(t, r, "a third attempt", func(reqs []webhookstest.Request) bool { return len(reqs) == 3 })
	want := `{"id":-9007199254740993,"name":"Monstera","tag":"tropical <& é>"}`
	for i, req := range reqs {
		if req.ID != reqs[0].ID || !strings.HasPrefix(req.ID, "msg_") {
			t.Errorf("attempt %d: webhook-id %q, want %q on every attempt", i+1, req.ID, reqs[0].ID)
		}
		if !req.Verified {
			t.Errorf("attempt %d: the signature did not verify with the Standard Webhooks library", i+1)
		}
		if string(req.Body) != want {
			t.Errorf("attempt %d: body %s, want %s", i+1, req.Body, want)
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("attempt %d: Content-Type %q", i+1, ct)
		}
		if ua := req.Header.Get("User-Agent"); !strings.HasPrefix(ua, "plantstore/") || !strings.Contains(ua, "webhooks") {
			t.Errorf("attempt %d: User-Agent %q, want plantstore/<version> (webhooks)", i+1, ua)
		}
		if ts, err := strconv.ParseInt(req.Timestamp, 10, 64); err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
			t.Errorf("attempt %d: webhook-timestamp %q, want the attempt's Unix time", i+1, req.Timestamp)
		}
		webhookstest.CheckOriginSchema(t, req.Body)
	}
	if got := []int{reqs[0].Status, reqs[1].Status, reqs[2].Status}; fmt.Sprint(got) != "[500 500 200]" {
		t.Errorf("answers %v", got)
	}
	if n := testutil.ToFloat64(s.metrics.attempts.WithLabelValues("crm", outcomeFailed, "5xx")); n != 2 {
		t.Errorf("failed attempts metric %v, want 2", n)
	}
	waitMetric(t, "a delivered attempt", func() bool {
		return testutil.ToFloat64(s.metrics.attempts.WithLabelValues("crm", outcomeDelivered, "2xx")) == 1
	})
	waitMetric(t, "the delivered event to leave the outbox", func() bool { return pending(t, s) == 0 })
}

// waitMetric polls cond every 5 ms for up to 20 s: the dispatcher it
// watches sends to a receiver on a real socket, which a synctest bubble
// cannot wait on.
func waitMetric(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Wait(t, 5*time.Millisecond, 20*time.Second, what, func() (bool, error) { return cond(), nil })
}

func pending(t *testing.T, s *testSender) int {
	t.Helper()
	stats, err := s.box.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, st := range stats {
		n += st.Pending
	}
	return n
}

func TestGoneStopsTheEndpointUntilTheFileChanges(t *testing.T) {
	secret := webhookstest.NewSecret()
	r, answer := statusReceiver(t, secret, http.StatusGone)
	ep := endpoint(t, "crm", r.URL, secret)
	s := startSender(t, testConfig(), ep)
	s.create(t, plant.Plant{ID: 1, Name: "a"})
	waitFor(t, r, "the 410", func(reqs []webhookstest.Request) bool { return len(reqs) == 1 })
	waitMetric(t, "the endpoint marked gone", func() bool { return testutil.ToFloat64(s.metrics.paused.WithLabelValues("crm")) == 1 })
	s.create(t, plant.Plant{ID: 2, Name: "b"})
	// Many polls and retry waits pass (10ms each): nothing is sent.
	time.Sleep(300 * time.Millisecond)
	if n := len(r.Requests()); n != 1 {
		t.Fatalf("%d requests after a 410, want only the one answered 410", n)
	}
	if n := pending(t, s); n != 2 {
		t.Fatalf("%d events pending, want both kept", n)
	}
	answer(http.StatusNoContent)
	s.d.Apply(ctx, File{Endpoints: []Endpoint{ep}}) // the file changed
	reqs := waitFor(t, r, "both events after the file changed", func(reqs []webhookstest.Request) bool { return len(r.Delivered()) == 2 })
	if testutil.ToFloat64(s.metrics.paused.WithLabelValues("crm")) != 0 {
		t.Error("the gone gauge stayed 1 after the file changed")
	}
	_ = reqs
}

func TestRetryAfterIsHonoured(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	r.SetAnswer(func(req webhookstest.Request, n int) (int, http.Header) {
		if strings.Contains(string(req.Body), `"later"`) {
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"3600"}}
		}
		if n == 1 {
			return http.StatusServiceUnavailable, nil // no Retry-After: the schedule's wait
		}
		return http.StatusOK, nil
	})
	s := startSender(t, testConfig(), endpoint(t, "crm", r.URL, secret))
	s.create(t, plant.Plant{ID: 1, Name: "later"})
	s.create(t, plant.Plant{ID: 2, Name: "soon"})
	waitFor(t, r, "the 503'd event delivered on its retry", func([]webhookstest.Request) bool { return len(r.Delivered()) == 1 })
	time.Sleep(300 * time.Millisecond) // thirty of the schedule's waits
	later := 0
	for _, req := range r.Requests() {
		if strings.Contains(string(req.Body), `"later"`) {
			later++
		}
	}
	if later != 1 {
		t.Fatalf("the event answered 429 with Retry-After: 3600 was attempted %d times, want 1", later)
	}
}

func TestBackoffFollowsTheScheduleWithJitterAndRetryAfter(t *testing.T) {
	d := &Dispatcher{cfg: Config{Retries: DefaultRetries}}
	for n, base := range DefaultRetries {
		for range 50 {
			got := d.backoff(n+1, 0)
			if got < base*8/10 || got > base*12/10 {
				t.Fatalf("backoff after attempt %d = %v, want %v ±20%%", n+1, got, base)
			}
		}
	}
	if got := d.backoff(1, time.Hour); got != time.Hour {
		t.Errorf("backoff with Retry-After 1h = %v, want 1h", got)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"120": 2 * time.Minute, "": 0, "-5": 0, "soon": 0, "99999999": 48 * time.Hour,
		"Tue, 24 Nov 2026 12:05:00 GMT": 5 * time.Minute, "Tue, 24 Nov 2026 11:05:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestDeadLettersAreListedAndRedeliveredOnTheAdminListener(t *testing.T) {
	secret := webhookstest.NewSecret()
	r, answer := statusReceiver(t, secret, http.StatusInternalServerError)
	s := startSender(t, testConfig(), endpoint(t, "crm", r.URL, secret))
	s.create(t, plant.Plant{ID: 5, Name: "fern"})
	// The first attempt and the schedule's three retries.
	waitMetric(t, "a dead letter", func() bool { return testutil.ToFloat64(s.metrics.deadLettered.WithLabelValues("crm")) == 1 })
	if n := len(r.Requests()); n != 4 {
		t.Fatalf("%d attempts before the dead letter, want 4 (1 + 3 retries)", n)
	}

	admin := mux.NewRouter()
	for _, route := range AdminRoutes(&Service{Outbox: s.box, Dispatcher: s.d}, zap.NewNop()) {
		admin.Handle(route.Path, route.Handler).Methods(route.Method)
	}
	srv := httptest.NewServer(admin)
	defer srv.Close()
	resp, err := http.Get(srv.URL + DeadLettersPath + "?endpoint=crm")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := s.box.DeadLetters(ctx, "crm", 10)
	if err != nil || len(kept) != 1 {
		t.Fatalf("the outbox keeps %d dead letters (%v), want 1", len(kept), err)
	}
	var listed []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET dead letters: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if len(listed) != 1 || listed[0]["endpoint"] != "crm" || listed[0]["attempts"] != float64(4) ||
		listed[0]["last_error"] != "answered 500" || fmt.Sprint(listed[0]["event"]) != "map[id:5 name:fern]" ||
		listed[0]["type"] != "plant.created" || listed[0]["version"] != float64(kept[0].Version) || kept[0].Version <= 0 {
		t.Fatalf("dead letters listed: %v", listed)
	}
	id := listed[0]["id"].(string)
	if r.Requests()[0].ID != id {
		t.Errorf("dead letter id %s, the requests' webhook-id %s", id, r.Requests()[0].ID)
	}
	for _, c := range []struct {
		path   string
		status int
	}{
		{DeadLettersPath + "?limit=0", http.StatusBadRequest},
		{DeadLettersPath + "?limit=01", http.StatusBadRequest},
		{DeadLettersPath + "?endpoint=other", http.StatusOK},
		{DeadLettersPath + "?limit=1&limit=2", http.StatusBadRequest},
		{DeadLettersPath + "?endpoint=crm&endpoint=other", http.StatusBadRequest},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("GET %s = %d, want %d", c.path, resp.StatusCode, c.status)
		}
	}
	post := func(id string) int {
		resp, err := http.Post(srv.URL+"/webhooks/dead-letters/"+id+"/redeliver", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("msg_unknown"); got != http.StatusNotFound {
		t.Errorf("redeliver an unknown id = %d, want 404", got)
	}
	answer(http.StatusOK)
	if got := post(id); got != http.StatusAccepted {
		t.Fatalf("redeliver = %d, want 202", got)
	}
	waitFor(t, r, "the redelivered event", func([]webhookstest.Request) bool { return len(r.Delivered()) == 1 })
	if _, ok := r.Delivered()[id]; !ok {
		t.Errorf("redelivered under another id: %v", r.Delivered())
	}
}

// A receiver that never answers holds its own endpoint's slots and delays
// no other endpoint.
func TestASlowEndpointDelaysNoOther(t *testing.T) {
	secret := webhookstest.NewSecret()
	slow, release := heldReceiver(t, secret)
	defer release()
	fast := webhookstest.NewReceiver(t, secret)
	cfg := testConfig()
	cfg.Timeout = time.Minute
	s := startSender(t, cfg, endpoint(t, "slow", slow.URL, secret), endpoint(t, "fast", fast.URL, secret))
	for i := range 20 {
		s.create(t, plant.Plant{ID: int64(i), Name: "p"})
	}
	waitFor(t, fast, "all 20 events at the fast endpoint", func([]webhookstest.Request) bool { return len(fast.Delivered()) == 20 })
	if n := len(slow.Requests()); n != 0 {
		t.Errorf("the slow endpoint answered %d requests while held", n)
	}
}

func TestInternalDestinationsAreRefusedAtDialTime(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	cfg := testConfig()
	cfg.AllowPrivate = false
	s := startSender(t, cfg, endpoint(t, "crm", r.URL, secret))
	s.create(t, plant.Plant{ID: 1, Name: "a"})
	waitMetric(t, "a refused attempt", func() bool {
		return testutil.ToFloat64(s.metrics.attempts.WithLabelValues("crm", outcomeRefused, "none")) >= 1
	})
	if n := len(r.Requests()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
}

// An endpoint added later gets the plants created after it, not the
// backlog; one removed loses its pending events, counted.
func TestAddedAndRemovedEndpoints(t *testing.T) {
	secret := webhookstest.NewSecret()
	first := webhookstest.NewReceiver(t, secret)
	first.SetAnswer(func(webhookstest.Request, int) (int, http.Header) {
		return http.StatusServiceUnavailable, http.Header{"Retry-After": {"3600"}}
	})
	second := webhookstest.NewReceiver(t, secret)
	one, two := endpoint(t, "one", first.URL, secret), endpoint(t, "two", second.URL, secret)
	s := startSender(t, testConfig(), one)
	s.create(t, plant.Plant{ID: 1, Name: "before"})
	waitFor(t, first, "the first attempt", func(reqs []webhookstest.Request) bool { return len(reqs) == 1 })

	s.d.Apply(ctx, File{Endpoints: []Endpoint{one, two}})
	s.create(t, plant.Plant{ID: 2, Name: "after"})
	waitFor(t, second, "the plant created after it was added", func([]webhookstest.Request) bool { return len(second.Delivered()) == 1 })
	for _, body := range second.Delivered() {
		if string(body) != `{"id":2,"name":"after"}` {
			t.Errorf("the added endpoint got %s, want only the plant created after it", body)
		}
	}

	s.d.Apply(ctx, File{Endpoints: []Endpoint{two}})
	if got := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("one")); got != 2 {
		t.Errorf("dropped metric of the removed endpoint = %v, want its 2 pending events", got)
	}
	waitMetric(t, "no event pending after the removal", func() bool { return pending(t, s) == 0 })
}

// SIGTERM's stop: no new attempt starts, one in flight is cut off when the
// budget ends, and its event stays pending for the next start.
func TestStopLeavesUnfinishedEventsPending(t *testing.T) {
	secret := webhookstest.NewSecret()
	r, release := heldReceiver(t, secret)
	defer release()
	cfg := testConfig()
	cfg.Timeout = time.Minute
	s := startSender(t, cfg, endpoint(t, "crm", r.URL, secret))
	s.create(t, plant.Plant{ID: 1, Name: "a"})
	waitMetric(t, "an attempt in flight", func() bool {
		return testutil.ToFloat64(s.metrics.attempts.WithLabelValues("crm", outcomeDelivered, "2xx")) != 0 || len(s.d.workers["crm"].slots) != 0
	})
	stop, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := s.d.Stop(stop); err != nil {
		t.Fatal(err)
	}
	if n := pending(t, s); n != 1 {
		t.Fatalf("%d events pending after the stop, want the cut-off one", n)
	}
	// Due at once (not after the schedule's wait), as the second attempt:
	// the first was sent, and the receiver may have acted on it.
	got, err := s.box.Claim(ctx, "crm", 10, time.Hour)
	if err != nil || len(got) != 1 || got[0].Attempt != 2 {
		t.Fatalf("after the stop: claimed %+v, %v; want the event due again as attempt 2", got, err)
	}
}

// A redirect is an answer, and not a 2xx one: it is not followed. An
// endless answer is read up to 64 KiB: the attempt ends, and a 2xx counts.
func TestRedirectsAreFailuresAndAnswersAreReadOnlySoFar(t *testing.T) {
	secret := webhookstest.NewSecret()
	target := webhookstest.NewReceiver(t, secret)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 32<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the sender stopped reading and closed the connection
			}
		}
	}))
	defer endless.Close()
	s := startSender(t, testConfig(), endpoint(t, "moved", redirect.URL, secret), endpoint(t, "endless", endless.URL, secret))
	s.create(t, plant.Plant{ID: 1, Name: "a"})
	waitMetric(t, "a 3xx failure and an endless 2xx delivered", func() bool {
		return testutil.ToFloat64(s.metrics.attempts.WithLabelValues("moved", outcomeFailed, "3xx")) >= 1 &&
			testutil.ToFloat64(s.metrics.attempts.WithLabelValues("endless", outcomeDelivered, "2xx")) == 1
	})
	if n := len(target.Requests()); n != 0 {
		t.Fatalf("the redirect was followed: its target got %d requests", n)
	}
}

// A dead letter whose endpoint left the file is not redelivered (pending,
// it would be dropped as a removed endpoint's event): 409, and it stays
// listed, across reloads, until its endpoint is back.
func TestARemovedEndpointsDeadLetterIsKeptNotRedelivered(t *testing.T) {
	secret := webhookstest.NewSecret()
	r, answer := statusReceiver(t, secret, http.StatusInternalServerError)
	crm, other := endpoint(t, "crm", r.URL, secret), endpoint(t, "other", r.URL, secret)
	s := startSender(t, testConfig(), crm)
	s.create(t, plant.Plant{ID: 5, Name: "fern"})
	waitMetric(t, "a dead letter", func() bool { return testutil.ToFloat64(s.metrics.deadLettered.WithLabelValues("crm")) == 1 })
	admin := mux.NewRouter()
	for _, route := range AdminRoutes(&Service{Outbox: s.box, Dispatcher: s.d}, zap.NewNop()) {
		admin.Handle(route.Path, route.Handler).Methods(route.Method)
	}
	srv := httptest.NewServer(admin)
	defer srv.Close()
	listed := func() []string {
		t.Helper()
		dead, err := s.box.DeadLetters(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, dl := range dead {
			ids = append(ids, dl.Endpoint+" "+dl.ID)
		}
		return ids
	}
	before := listed()
	if len(before) != 1 {
		t.Fatalf("dead letters %v, want one of crm", before)
	}
	id := strings.TrimPrefix(before[0], "crm ")
	redeliver := func() (int, string) {
		resp, err := http.Post(srv.URL+"/webhooks/dead-letters/"+id+"/redeliver", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}

	s.d.Apply(ctx, File{Endpoints: []Endpoint{other}}) // crm left the file
	status, body := redeliver()
	if want := `{"error":409,"message":"the endpoint \"crm\" of this dead letter is not in the webhooks file; it is kept: add the endpoint back, then redeliver"}`; status != http.StatusConflict || body != want {
		t.Fatalf("redeliver of a removed endpoint's dead letter = %d %s, want 409 %s", status, body, want)
	}
	s.d.Apply(ctx, File{Endpoints: []Endpoint{other}}) // another reload
	if after := listed(); !slices.Equal(after, before) {
		t.Fatalf("dead letters after a refused redeliver and a reload: %v, want %v", after, before)
	}
	if got := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("crm")); got != 0 {
		t.Fatalf("dropped %v events of crm, want none", got)
	}

	answer(http.StatusOK)
	s.d.Apply(ctx, File{Endpoints: []Endpoint{crm, other}}) // crm is back
	if status, body := redeliver(); status != http.StatusAccepted || body != "" {
		t.Fatalf("redeliver once crm is back = %d %q, want 202 and no body", status, body)
	}
	waitFor(t, r, "the redelivered event", func([]webhookstest.Request) bool { return len(r.Delivered()) == 1 })
	if _, ok := r.Delivered()[id]; !ok {
		t.Errorf("redelivered under another id: %v", r.Delivered())
	}
}
