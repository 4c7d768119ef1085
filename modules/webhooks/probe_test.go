package webhooks

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestADownEndpointIsProbedOnTheProductionSchedule, on synctest's clock
// with the flags' defaults (retries 5s, 5m, 30m, 2h, 5h, 10h, 10h;
// concurrency 16; polling every 500 ms): the first attempts fail and the
// circuit opens; for the next ten minutes the endpoint gets probes alone,
// 5 s after the opening, then 10, 20, 40 s apart and a minute apart from
// then on: exactly twelve. Once it answers, the next probe closes the
// circuit and every event arrives once.
func TestADownEndpointIsProbedOnTheProductionSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		receiver := &inProcessReceiver{status: http.StatusServiceUnavailable}
		store, metrics := startInProcess(t, flagDefaults(), receiver)
		start := time.Now()
		open := metrics.circuitOpen.WithLabelValues("crm")

		// The creates write their events due; the first poll, at 500 ms,
		// claims sixteen (the concurrency) and attempts them at once: all
		// fail, and the circuit opens on the tenth failure in a row.
		const events = 40
		createFerns(t, store, events)
		time.Sleep(time.Second)
		synctest.Wait()
		first := receiver.received()
		if len(first) != 16 || testutil.ToFloat64(open) != 1 {
			t.Fatalf("%d attempts, circuit open %v a second after the creates; want 16 and open", len(first), testutil.ToFloat64(open))
		}
		opened := first[0].at
		for _, a := range first {
			if a.at != opened || a.at.Sub(start) != 500*time.Millisecond {
				t.Fatalf("the first attempts at %v after the start, want all at the first poll, 500ms", a.at.Sub(start))
			}
		}

		// Ten minutes down: probes alone, 5, 10, 20, 40 s apart, then a
		// minute apart (12 times the first retry's wait).
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		var probes []time.Duration
		for _, a := range receiver.received()[16:] {
			probes = append(probes, a.at.Sub(opened))
		}
		want := []time.Duration{5 * time.Second, 15 * time.Second, 35 * time.Second, 75 * time.Second}
		for at := 135 * time.Second; at < 10*time.Minute; at += time.Minute {
			want = append(want, at)
		}
		if len(want) != 12 || !equalDurations(probes, want) {
			t.Fatalf("probes in ten minutes down at %v after the opening, want %v", probes, want)
		}

		// Back up: the probe 615 s after the opening gets through and closes the circuit;
		// every event, the failed ones with the id they failed with,
		// arrives once their retry is due (the furthest, a third attempt,
		// at most 36 min after its second).
		receiver.answer(http.StatusNoContent)
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		got := receiver.received()
		delivered := map[string]int{}
		for _, a := range got {
			if a.status == http.StatusNoContent {
				delivered[a.id]++
			}
		}
		if len(got) != 16+12+events || len(delivered) != events || testutil.ToFloat64(open) != 0 {
			t.Fatalf("%d attempts, %d events delivered, circuit open %v; want %d, %d and closed", len(got), len(delivered), testutil.ToFloat64(open), 16+12+events, events)
		}
		for _, a := range got {
			if delivered[a.id] != 1 {
				t.Fatalf("event %s delivered %d times, want once", a.id, delivered[a.id])
			}
		}
		if at := got[16+12].at.Sub(opened); got[16+12].status != http.StatusNoContent || at != 615*time.Second {
			t.Fatalf("the first delivery after the outage at %v after the opening, want the probe at 615s", at)
		}
		if n := testutil.ToFloat64(metrics.deadLettered.WithLabelValues("crm")); n != 0 {
			t.Fatalf("%v dead letters, want none", n)
		}
		stats, err := store.Outbox().Stats(context.Background())
		if err != nil || stats["crm"].Pending != 0 {
			t.Fatalf("outbox %+v, %v once every event arrived; want nothing pending", stats, err)
		}
	})
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
