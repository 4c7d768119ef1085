package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/outbox/outboxtest"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A claim whose commit's wait for the synchronous standby is canceled (an
// operator's pg_cancel_backend) hands out nothing: its word may be lost
// with the primary. The rows are claimable again once the lease passes.
// Not parallel, as ha_test.go's tests of a pair are not.
func TestPostgresClaimWhoseReplicationWasCanceledHandsOutNothing(t *testing.T) {
	pair := pgtest.NewPair(t, "plants")
	s := openStore(t, Config{URL: pair.MultiHostURL("plants")})
	box := s.Outbox()
	outboxtest.NewWriter(outboxtest.Subject{Plants: s, Outbox: box}, hour).Write(t, event(1), false, "a")

	pair.StallStandby(t)
	type claimed struct {
		ds  []outbox.Delivery
		err error
	}
	outcome := make(chan claimed, 1)
	go func() {
		ds, err := box.Claim(ctx, "a", 10, time.Second)
		outcome <- claimed{ds, err}
	}()
	waiting := `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'plantstore' AND wait_event = 'SyncRep'`
	poll.Wait(t, 5*time.Millisecond, 10*time.Second, "the claim's commit to wait for the standby", func() (bool, error) {
		n, err := pair.Primary.QueryInt("plants", waiting)
		return err == nil && n == 1, err
	})
	if n, err := pair.Primary.QueryInt("plants", `SELECT count(*) FROM (SELECT pg_cancel_backend(pid) FROM pg_stat_activity
WHERE application_name = 'plantstore' AND wait_event = 'SyncRep') c`); err != nil || n != 1 {
		t.Fatalf("pg_cancel_backend: %d, %v", n, err)
	}
	got := <-outcome
	if !errors.Is(got.err, plant.ErrUnavailable) || len(got.ds) != 0 {
		t.Fatalf("Claim whose wait for the standby was canceled = %+v, %v, want no deliveries and ErrUnavailable", got.ds, got.err)
	}

	pair.ResumeStandby(t)
	late := claimSoonAfter(t, box, "a", time.Second)
	if len(late) != 1 || string(late[0].Body) != string(event(1).Body) || late[0].Attempt != 2 {
		t.Fatalf("after the lease claimed %+v, want the event at attempt 2", late)
	}
}
