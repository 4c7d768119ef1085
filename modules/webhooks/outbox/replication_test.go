package outbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/outbox"
)

// A claim whose commit's wait for the synchronous standby is canceled (an
// operator's pg_cancel_backend) hands out nothing: its word may be lost
// with the primary. The rows are claimable again once the lease passes.
func TestPostgresClaimWhoseReplicationWasCanceledHandsOutNothing(t *testing.T) {
	pair := pgtest.NewPair(t, "plants")
	s, err := pgstore.Open(ctx, pgstore.Config{URL: pair.MultiHostURL("plants")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	box := outbox.NewPostgres(s.Pool())
	s.OnCreate(box.Hook(hour, func(creating []pgstore.Creating) ([]outbox.Row, func(map[int64]struct{}, error)) {
		return []outbox.Row{{ID: outbox.NewID(), Plant: creating[0].Plant.ID, Endpoint: "a", Event: event(1)}}, nil
	}))
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}

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
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, err := pair.Primary.QueryInt("plants", waiting); err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim's commit never waited for the standby")
		}
	}
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
