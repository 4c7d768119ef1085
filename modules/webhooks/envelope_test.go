package webhooks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// The envelope is exact: the type, the commit's time in UTC with three
// fractional digits, the version, and the plant as stored (its strings as
// the client wrote them, "<" and non-ASCII letters included), the same
// bytes on every attempt.
func TestEnvelopesAreExactAndTheSameOnEveryAttempt(t *testing.T) {
	tag := "<dog> & \"cat\""
	created := EventOf(changes.Change{Ctx: context.Background(), Kind: changes.Created, After: plant.Plant{ID: 1, Name: "Rex \u00e9\u00e8 \u65e5\u672c", Tag: &tag}})
	updated := EventOf(changes.Change{Ctx: context.Background(), Kind: changes.Replaced,
		Before: plant.Plant{ID: 1, Name: "Rex"}, After: plant.Plant{ID: 1, Name: "Rex II"}})
	deleted := EventOf(changes.Change{Ctx: context.Background(), Kind: changes.Deleted, Before: plant.Plant{ID: 1}})
	cet := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		dl   outbox.Delivery
		want string
	}{
		{outbox.Delivery{Kind: changes.Created, Version: 16, Body: created.Body, CreatedAt: time.Date(2026, 11, 25, 20, 40, 0, 123456789, cet)},
			`{"type":"plant.created","timestamp":"2026-11-25T19:40:00.123Z","data":{"id":1,"version":16,"plant":{"id":1,"name":"Rex éè 日本","tag":"<dog> & \"cat\""}}}`},
		{outbox.Delivery{Kind: changes.Replaced, Version: 17, Body: updated.Body, CreatedAt: time.Date(2026, 11, 25, 19, 40, 1, 0, time.UTC)},
			`{"type":"plant.updated","timestamp":"2026-11-25T19:40:01.000Z","data":{"id":1,"version":17,"plant":{"id":1,"name":"Rex II"}}}`},
		{outbox.Delivery{Kind: changes.Deleted, Version: 18, Body: deleted.Body, CreatedAt: time.Date(2026, 11, 25, 19, 40, 2, 999999999, time.UTC)},
			`{"type":"plant.deleted","timestamp":"2026-11-25T19:40:02.999Z","data":{"id":1,"version":18}}`},
		// A row written before kinds were recorded announced a create.
		{outbox.Delivery{Version: 0, Body: []byte(`{"id":-9007199254740993,"name":"old"}`), CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 60000000, time.UTC)},
			`{"type":"plant.created","timestamp":"2026-01-02T03:04:05.060Z","data":{"id":-9007199254740993,"version":0,"plant":{"id":-9007199254740993,"name":"old"}}}`},
	} {
		for attempt := 1; attempt <= 2; attempt++ {
			c.dl.Attempt = attempt
			got, err := payload(Endpoint{Format: FormatEnvelope}, c.dl)
			if err != nil || string(got) != c.want {
				t.Errorf("envelope of %v, attempt %d:\n got %s, %v\nwant %s", c.dl.Kind, attempt, got, err, c.want)
			}
		}
		webhookstest.CheckEventSchema(t, kindOf(c.dl).String(), []byte(c.want))
		got, _ := payload(Endpoint{Format: FormatOrigin}, c.dl)
		if string(got) != string(c.dl.Body) {
			t.Errorf("origin body of %v = %s, want the data as is %s", c.dl.Kind, got, c.dl.Body)
		}
		if kindOf(c.dl) == changes.Created {
			webhookstest.CheckEventSchema(t, "plant.created", got)
			webhookstest.CheckOriginSchema(t, got)
		}
	}
	if want := `{"id":1,"name":"Rex éè 日本","tag":"<dog> & \"cat\""}`; string(created.Body) != want {
		t.Errorf("created data %s, want %s", created.Body, want)
	}
	if want := `{"id":1}`; string(deleted.Body) != want {
		t.Errorf("deleted data %s, want %s", deleted.Body, want)
	}
}

// An envelope endpoint gets the envelope, signed as sent: the Standard
// Webhooks library verifies the bytes it received.
func TestAnEnvelopeIsSignedAsSent(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	s := newPoster(testConfig(), tracenoop.NewTracerProvider())
	ep := endpoint(t, "crm", r.URL, secret)
	ep.Format = FormatEnvelope
	dl := outbox.Delivery{ID: outbox.NewID(), Kind: changes.Deleted, Version: 42, Body: []byte(`{"id":7}`),
		CreatedAt: time.Date(2026, 11, 25, 19, 40, 0, 5e6, time.UTC), Attempt: 1}
	if got := s.attempt(ctx, ep, dl); got.outcome != outcomeDelivered {
		t.Fatalf("attempt = %+v", got)
	}
	reqs := r.Requests()
	want := `{"type":"plant.deleted","timestamp":"2026-11-25T19:40:00.005Z","data":{"id":7,"version":42}}`
	if len(reqs) != 1 || string(reqs[0].Body) != want || !reqs[0].Verified || reqs[0].ID != dl.ID {
		t.Fatalf("requests %+v, want one verified with body %s", reqs, want)
	}
}

// The plan writes a row per change and endpoint subscribed to its kind,
// with the change's kind and data: an origin endpoint (neither format nor
// events in the file) only plant.created, with today's body.
func TestPlanRowsAnnounceEachKindToItsSubscribers(t *testing.T) {
	secret := webhookstest.NewSecret()
	f, err := ParseFile([]byte(fmt.Sprintf(`
endpoints:
  - {name: legacy, url: "https://a.example", secrets: [%[1]s]}
  - {name: all, url: "https://a.example", secrets: [%[1]s], format: envelope}
  - {name: gone, url: "https://a.example", secrets: [%[1]s], format: envelope, events: [plant.deleted]}
`, secret)), false)
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	d := NewDispatcher(testConfig(), nil, f, metrics, tracenoop.NewTracerProvider(), zap.NewNop())
	tag := "<tropical>"
	rows, written := d.Plan([]changes.Change{
		{Ctx: ctx, Kind: changes.Created, After: plant.Plant{ID: 1, Name: "Monstera é", Tag: &tag}},
		{Ctx: ctx, Kind: changes.Replaced, Before: plant.Plant{ID: 2, Name: "a"}, After: plant.Plant{ID: 2, Name: "b"}},
		{Ctx: ctx, Kind: changes.Deleted, Before: plant.Plant{ID: 3, Name: "c"}},
	}, false)
	if written != nil {
		t.Error("a plan without claims returned a written func")
	}
	var got []string
	ids := map[string]bool{}
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d %v %s %s leased=%v", r.Plant, r.Kind, r.Endpoint, r.Event.Body, r.Leased))
		if !strings.HasPrefix(r.ID, "msg_") || ids[r.ID] {
			t.Errorf("row id %q: want a new msg_ id per row", r.ID)
		}
		ids[r.ID] = true
	}
	want := []string{
		`1 plant.created legacy {"id":1,"name":"Monstera é","tag":"<tropical>"} leased=false`,
		`1 plant.created all {"id":1,"name":"Monstera é","tag":"<tropical>"} leased=false`,
		`2 plant.updated all {"id":2,"name":"b"} leased=false`,
		`3 plant.deleted all {"id":3} leased=false`,
		`3 plant.deleted gone {"id":3} leased=false`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An endpoint whose file entry has neither format nor events gets, from a
// real store, exactly the bytes and headers it got before formats existed:
// the plant as stored, signed, with no envelope.
func TestAnEndpointWithNeitherKeyGetsTodaysBytes(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	f, err := ParseFile([]byte(fmt.Sprintf("endpoints:\n  - name: crm\n    url: %s\n    secrets: [%s]\n", r.URL, secret)), true)
	if err != nil {
		t.Fatal(err)
	}
	s := startSender(t, testConfig(), f.Endpoints...)
	tag := "<tropical> & \"wet\""
	s.create(t, plant.Plant{ID: 7, Name: "Monstera \u00e9 \u65e5", Tag: &tag})
	s.create(t, plant.Plant{ID: 8, Name: "Fern"})
	reqs := waitFor(t, r, "both events", func([]webhookstest.Request) bool { return len(r.Delivered()) == 2 })
	bodies := map[string]bool{}
	for _, req := range reqs {
		bodies[string(req.Body)] = true
		names := slices.Sorted(maps.Keys(req.Header))
		if want := "Accept-Encoding Content-Length Content-Type User-Agent Webhook-Id Webhook-Signature Webhook-Timestamp"; strings.Join(names, " ") != want {
			t.Errorf("request %s: headers %v, want %s", req.ID, names, want)
		}
		if !req.Verified || req.Header.Get("Content-Type") != "application/json" || req.Header.Get("Content-Length") != strconv.Itoa(len(req.Body)) {
			t.Errorf("request %s: verified %v, Content-Type %q, Content-Length %q for %d bytes", req.ID, req.Verified,
				req.Header.Get("Content-Type"), req.Header.Get("Content-Length"), len(req.Body))
		}
	}
	want := map[string]bool{`{"id":7,"name":"Monstera é 日","tag":"<tropical> & \"wet\""}`: true, `{"id":8,"name":"Fern"}`: true}
	if fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Fatalf("bodies %v, want %v", bodies, want)
	}
}
