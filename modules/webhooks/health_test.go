package webhooks

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// An endpoint made through the API whose every attempt fails is disabled
// once they have failed for --webhooks-disable-after (its default, with
// the production retry schedule), not before; its events then wait, and
// enabling it sends them.
func TestAPIEndpointFailingLongIsDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		receiver := &inProcessReceiver{status: 500}
		store, err := boltstore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		endpoints := store.Endpoints()
		now := time.Now().UTC()
		if _, err := endpoints.PutEndpoint(context.Background(), endpointstore.Endpoint{ID: "ep_shop", URL: "https://shop.example/hooks",
			Format: string(FormatOrigin), Enabled: true, Secrets: []endpointstore.Secret{{Value: webhookstest.NewSecret()}},
			CreatedAt: now, UpdatedAt: now}, 0); err != nil {
			t.Fatal(err)
		}
		metrics, err := NewMetrics(prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		cfg := flagDefaults()
		// Its largest value: the bubble's three days of polls at the
		// default would be half a million claims for nothing.
		cfg.PollInterval = time.Minute
		d := NewDispatcher(cfg, store.Outbox(), File{}, metrics, tracenoop.NewTracerProvider(), zap.NewNop(), ManagedBy(endpoints))
		d.poster.client.Transport = receiver
		Hook(store.Outbox(), d)
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = d.Stop(context.Background())
			_ = store.Close()
		})
		synctest.Wait()

		// A plant every five hours: attempts keep coming (each event's
		// for about a day), and keep failing.
		start := time.Now()
		id := int64(0)
		for time.Since(start) < cfg.DisableAfter-5*time.Hour {
			id++
			createFern(t, store, id)
			time.Sleep(5 * time.Hour)
			synctest.Wait()
			if ep, _ := endpoints.GetEndpoint(context.Background(), "ep_shop"); !ep.Enabled {
				t.Fatalf("disabled after %v of failures, before --webhooks-disable-after %v", time.Since(start), cfg.DisableAfter)
			}
		}
		for range 2 {
			id++
			createFern(t, store, id)
			time.Sleep(5 * time.Hour)
			synctest.Wait()
		}
		ep, err := endpoints.GetEndpoint(context.Background(), "ep_shop")
		if err != nil {
			t.Fatal(err)
		}
		if ep.Enabled || !strings.HasPrefix(ep.DisabledReason, "every attempt failed for 72h0m0s (--webhooks-disable-after), the last: ") {
			t.Fatalf("after %v of failures: enabled %v, reason %q", time.Since(start), ep.Enabled, ep.DisabledReason)
		}
		if got := testutil.ToFloat64(metrics.paused.WithLabelValues("ep_shop")); got != 1 {
			t.Fatalf("paused gauge = %v, want 1", got)
		}

		// Enabled again, against a receiver that answers, every event
		// that waited is delivered: all but those whose attempts ran out
		// while it failed, which are dead letters.
		receiver.answer(200)
		ep.Enabled, ep.DisabledReason = true, ""
		if _, err := endpoints.PutEndpoint(context.Background(), ep, ep.Revision); err != nil {
			t.Fatal(err)
		}
		d.endpointsChanged(context.Background())
		time.Sleep(11 * time.Hour) // the longest retry wait, jitter included
		synctest.Wait()
		delivered := map[string]bool{}
		for _, a := range receiver.received() {
			if a.status == 200 {
				delivered[a.id] = true
			}
		}
		dead, err := store.Outbox().DeadLetters(context.Background(), "ep_shop", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, dl := range dead {
			if delivered[dl.ID] {
				t.Fatalf("%s is delivered and a dead letter", dl.ID)
			}
		}
		if len(delivered) == 0 || len(delivered)+len(dead) != int(id) {
			t.Fatalf("after the enable, %d events delivered and %d dead letters, want all %d events in one or the other", len(delivered), len(dead), id)
		}
	})
}
