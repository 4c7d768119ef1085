package webhooks

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAFailingEventFollowsTheProductionSchedule, on synctest's clock with
// the flags' defaults: an event its receiver always fails is attempted at
// the first poll (500 ms) and then each retry its schedule's wait later
// (5s, 5m, 30m, 2h, ...), spread by ±20% and rounded up to the next poll:
// exactly four attempts in the first 45 minutes, the 2 h retry not among
// them. The schedule's later waits are left out: the settler's 50 ms
// ticker makes each fake hour cost a fraction of a second of the test's.
func TestAFailingEventFollowsTheProductionSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		receiver := &inProcessReceiver{status: http.StatusInternalServerError}
		store, metrics := startInProcess(t, flagDefaults(), receiver)
		start := time.Now()
		createFerns(t, store, 1)

		// 5s + 5m + 30m = 35m5s, at most 42m6s with +20%; the next retry
		// waits 2 h -20% at least.
		time.Sleep(45 * time.Minute)
		synctest.Wait()
		got := receiver.received()
		if len(got) != 4 {
			t.Fatalf("%d attempts in 45m, want 4 (the first and three retries)", len(got))
		}
		if at := got[0].at.Sub(start); at != 500*time.Millisecond {
			t.Fatalf("the first attempt %v after the create, want at the first poll, 500ms", at)
		}
		schedule := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute}
		for i, wait := range schedule {
			gap := got[i+1].at.Sub(got[i].at)
			low, high := wait*8/10, wait*12/10+500*time.Millisecond
			if gap < low || gap > high || got[i+1].id != got[0].id {
				t.Fatalf("retry %d of %s came %v after the attempt before, want %s in [%v, %v]", i+1, got[i+1].id, gap, got[0].id, low, high)
			}
		}
		if n := testutil.ToFloat64(metrics.deadLettered.WithLabelValues("crm")); n != 0 {
			t.Fatalf("%v dead letters, want none yet", n)
		}
	})
}
