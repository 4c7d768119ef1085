package webhooks

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// On postgres a change's first attempt is a handoff, built from what the
// commit returned, and a retry is claimed from the table: both send the
// same envelope, byte for byte, the commit's time to the millisecond
// included, for each kind of change.
func TestPostgresSendsOneEnvelopeOnEveryAttempt(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	r.SetAnswer(func(_ webhookstest.Request, n int) (int, http.Header) {
		if n == 1 {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	cfg := testConfig()
	cfg.Concurrency = 4
	ep := endpoint(t, "feed", r.URL, secret)
	ep.Format = FormatEnvelope
	s, d := startPostgresSender(t, cfg, ep)
	if res, err := s.Create(ctx, plant.Plant{ID: 3, Name: "Fern"}); res != plant.Created || err != nil {
		t.Fatalf("Create = %v, %v", res, err)
	}
	if err := s.Replace(ctx, plant.Plant{ID: 3, Name: "Fern \u00e9"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// The handoffs' attempts fail, with no poll for an hour; the retries,
	// due 10 ms later, are claimed when the test wakes the loop.
	waitFor(t, r, "the three first attempts", func(reqs []webhookstest.Request) bool { return len(reqs) == 3 })
	w := (*d.byName.Load())["feed"]
	poll.Wait(t, 20*time.Millisecond, 20*time.Second, "the retries", func() (bool, error) {
		if len(r.Delivered()) >= 3 {
			return true, nil
		}
		w.wakeUp()
		return false, fmt.Errorf("requests %d", len(r.Requests()))
	})
	first := map[string]string{}
	for _, req := range r.Requests() {
		if f, ok := first[req.ID]; ok && f != string(req.Body) {
			t.Errorf("webhook-id %s: first %s, then %s", req.ID, f, req.Body)
		}
		first[req.ID] = string(req.Body)
	}
	if len(first) != 3 {
		t.Fatalf("%d events, want 3", len(first))
	}
}
