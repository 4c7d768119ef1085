package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/poll"
)

// A commit on the pair's primary waits for the standby while its WAL
// receiver is stopped, and completes once it resumes; after a SIGKILL of
// the primary and a promotion, the multi-host URL reaches the standby,
// with every committed row.
func TestPair(t *testing.T) {
	pair := NewPair(t, "app")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pair.MultiHostURL("app"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}

	pair.StallStandby(t)
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "INSERT INTO t VALUES (1)")
		done <- err
	}()
	waiting := "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"
	poll.Wait(t, 10*time.Millisecond, time.Minute, "the insert to wait for the standby", func() (bool, error) {
		n, err := pair.Primary.QueryInt("app", waiting)
		if err != nil {
			return false, poll.Stop(err)
		}
		return n == 1, fmt.Errorf("%d commits wait for it", n)
	})
	pair.ResumeStandby(t)
	if err := <-done; err != nil {
		t.Fatalf("the insert after the standby resumed: %v", err)
	}
	conn.Close(ctx)

	if err := pair.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := pair.Standby.Promote(); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, pair.MultiHostURL("app"))
	if err != nil {
		t.Fatalf("the multi-host URL after the promotion: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows on the promoted standby: %d, %v, want 1", n, err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("a write on the promoted standby: %v", err)
	}
}
