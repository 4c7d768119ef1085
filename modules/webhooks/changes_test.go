package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// receivedEnvelope is an envelope as a receiver decodes it.
type receivedEnvelope struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		ID      int64           `json:"id"`
		Version int64           `json:"version"`
		Plant   json.RawMessage `json:"plant"`
	} `json:"data"`
}

// A real bolt store and real receivers on loopback, polls an hour apart:
// each of a plant's changes reaches the envelope endpoint because the
// store's change log woke the dispatcher, as an exact envelope whose
// version is greater than the previous change's and whose timestamp is the
// change's commit time; the origin endpoint gets the create alone, as the
// plant. A replay through the admin route sends the three envelopes again,
// byte for byte, under their webhook-ids.
func TestAPlantsChangesReachAnEnvelopeEndpointInVersionOrder(t *testing.T) {
	secret := webhookstest.NewSecret()
	feed, origin := webhookstest.NewReceiver(t, secret), webhookstest.NewReceiver(t, secret)
	cfg := testConfig()
	cfg.PollInterval = time.Hour
	envelopes := endpoint(t, "feed", feed.URL, secret)
	envelopes.Format = FormatEnvelope
	s := startSenderWith(t, cfg, func(store *boltstore.Store) []Option { return []Option{WakeOn(store.Changes())} },
		envelopes, endpoint(t, "crm", origin.URL, secret))
	for name := range *s.d.byName.Load() {
		s.claims.waitForFirst(t, name)
	}

	tag := "<palm> & \"fan\""
	start := time.Now()
	s.create(t, plant.Plant{ID: 7, Name: "Washingtonia \u00e9 \u65e5", Tag: &tag})
	waitFor(t, feed, "plant.created", func([]webhookstest.Request) bool { return len(feed.Delivered()) == 1 })
	if err := s.store.Replace(ctx, plant.Plant{ID: 7, Name: "Washingtonia robusta"}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, feed, "plant.updated", func([]webhookstest.Request) bool { return len(feed.Delivered()) == 2 })
	if err := s.store.Delete(ctx, 7); err != nil {
		t.Fatal(err)
	}
	reqs := waitFor(t, feed, "plant.deleted", func([]webhookstest.Request) bool { return len(feed.Delivered()) == 3 })
	end := time.Now()

	wantData := []string{
		`{"id":7,"name":"Washingtonia é 日","tag":"<palm> & \"fan\""}`,
		`{"id":7,"name":"Washingtonia robusta"}`,
		``,
	}
	var last int64
	var sent []string
	for i, req := range reqs {
		var e receivedEnvelope
		if err := json.Unmarshal(req.Body, &e); err != nil || !req.Verified {
			t.Fatalf("request %d: %s (verified %v): %v", i+1, req.Body, req.Verified, err)
		}
		if want := changes.Kinds[i].String(); e.Type != want || e.Data.ID != 7 || string(e.Data.Plant) != wantData[i] {
			t.Errorf("request %d: %s, want a %s of plant 7 with %s", i+1, req.Body, want, wantData[i])
		}
		if e.Data.Version <= last {
			t.Errorf("request %d: version %d after %d: a later change's version must be greater", i+1, e.Data.Version, last)
		}
		last = e.Data.Version
		at, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if err != nil || len(e.Timestamp) != len("2026-11-25T19:40:00.123Z") || !strings.HasSuffix(e.Timestamp, "Z") ||
			at.Before(start.Truncate(time.Millisecond)) || at.After(end) {
			t.Errorf("request %d: timestamp %q, want the commit's time in UTC with 3 fractional digits, between %v and %v", i+1, e.Timestamp, start, end)
		}
		want := fmt.Sprintf(`{"type":%q,"timestamp":%q,"data":{"id":7,"version":%d`, e.Type, e.Timestamp, e.Data.Version)
		if wantData[i] != "" {
			want += `,"plant":` + wantData[i]
		}
		if want += "}}"; string(req.Body) != want {
			t.Errorf("request %d: body %s, want exactly %s", i+1, req.Body, want)
		}
		webhookstest.CheckEventSchema(t, e.Type, req.Body)
		sent = append(sent, req.ID+" "+string(req.Body))
	}
	originReqs := origin.Requests()
	if len(originReqs) != 1 || string(originReqs[0].Body) != wantData[0] || !originReqs[0].Verified {
		t.Fatalf("the origin endpoint got %d requests (first %s), want the create alone as %s", len(originReqs), firstBody(originReqs), wantData[0])
	}
	waitMetric(t, "the three envelopes settled as delivered", func() bool { return pending(t, s) == 0 })

	srv := adminServer(t, s.d, s.box)
	status, _, body := post(t, srv.URL+"/webhooks/endpoints/feed/replay?since="+start.Add(-time.Second).UTC().Format(time.RFC3339Nano))
	if status != 200 || body != `{"endpoint":"feed","replayed":3}` {
		t.Fatalf("replay = %d %s, want 200 {\"endpoint\":\"feed\",\"replayed\":3}", status, body)
	}
	all := waitFor(t, feed, "the replayed envelopes", func(reqs []webhookstest.Request) bool { return len(reqs) == 6 })
	var again []string
	for _, req := range all[3:] {
		again = append(again, req.ID+" "+string(req.Body))
	}
	slices.Sort(sent)
	slices.Sort(again)
	if !slices.Equal(again, sent) {
		t.Fatalf("replayed\n%s\nwant the same ids and bytes as first sent\n%s", strings.Join(again, "\n"), strings.Join(sent, "\n"))
	}
	if n := len(origin.Requests()); n != 1 {
		t.Fatalf("the origin endpoint got %d requests after another endpoint's replay, want its 1", n)
	}
}

func firstBody(reqs []webhookstest.Request) string {
	if len(reqs) == 0 {
		return "none"
	}
	return string(reqs[0].Body)
}
