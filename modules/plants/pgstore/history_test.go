package pgstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// createPlants creates plants with the ids, failing t on an error.
func createPlants(t *testing.T, s *Store, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "p"}); err != nil {
			t.Fatal(err)
		}
	}
}

// headOf reads s's head, failing t on an error.
func headOf(t *testing.T, s *Store) changes.Cursor {
	t.Helper()
	h, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// shown waits until the log after from shows n changes (a transaction
// of another test on the shared server may hold them back a moment) and
// returns them.
func shown(t *testing.T, s *Store, from changes.Cursor, n int) []changes.Record {
	t.Helper()
	var recs []changes.Record
	poll.Wait(t, 10*time.Millisecond, 30*time.Second, "the changes shown", func() (bool, error) {
		var err error
		recs, err = s.Changes(ctx, from, 10)
		if err != nil {
			return false, poll.Stop(err)
		}
		return len(recs) >= n, fmt.Errorf("%d changes shown, want %d", len(recs), n)
	})
	if len(recs) != n {
		t.Fatalf("%d changes shown, want %d", len(recs), n)
	}
	return recs
}

// TestCursorOfAnotherDatabaseIsUnknown: each database has a history of its
// own; a cursor of one, at a change the other's log may hold at the same
// position or not, is refused by the other, never read as its position.
func TestCursorOfAnotherDatabaseIsUnknown(t *testing.T) {
	t.Parallel()
	a := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	b := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	if a.History() == 0 || a.History() == b.History() {
		t.Fatalf("histories %d and %d: want two, neither zero", a.History(), b.History())
	}
	createPlants(t, a, 1, 2)
	createPlants(t, b, 1, 2)
	for _, after := range []changes.Cursor{shown(t, a, changes.Cursor{}, 2)[1].Cursor, {History: a.History()}} {
		if recs, err := b.Changes(ctx, after, 10); !errors.Is(err, changes.ErrCursorUnknown) {
			t.Fatalf("another database's cursor %+v: %v, %v; want ErrCursorUnknown", after, recs, err)
		}
	}
	if recs, err := b.Changes(ctx, shown(t, b, changes.Cursor{}, 2)[1].Cursor, 10); err != nil || len(recs) != 0 {
		t.Fatalf("its own newest change: %v, %v; want nothing after it", recs, err)
	}
}

// TestRestoredDatabaseRefusesTheLostCursors: a copy of the database taken
// with its replicas stopped (here CREATE DATABASE ... TEMPLATE, a file
// copy as a restore gives back), while the original goes on. The copy
// keeps the history: a cursor from before the copy follows on in it. A
// cursor of a change the copy does not hold is refused, and the copy's
// versions, once a replica starts on it, are past every version the
// original gave, so that a receiver applying by version takes its
// changes.
func TestRestoredDatabaseRefusesTheLostCursors(t *testing.T) {
	t.Parallel()
	cluster := pgtest.Shared(t)
	url := cluster.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	createPlants(t, s, 1, 2)
	before := shown(t, s, changes.Cursor{}, 2)[1].Cursor
	s.Close()

	original, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	// The copy is dropped, and admin closed, after the stores opened on it
	// (cleanups run last first): a copy left behind would be in the way of
	// the next test handed the same database (-count).
	copyName := original.Database + "_restored"
	t.Cleanup(func() {
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+copyName+" WITH (FORCE)"); err != nil {
			t.Errorf("drop the copy: %v", err)
		}
	})
	// The pool's sessions end a moment after Close returns: until then
	// the copy is refused as the original being in use (55006), and only
	// that is waited out.
	poll.Wait(t, 10*time.Millisecond, 10*time.Second, "the copy of the database", func() (bool, error) {
		_, err := admin.Exec(ctx, "CREATE DATABASE "+copyName+" TEMPLATE "+original.Database)
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "55006" {
			return false, err
		}
		if err != nil {
			return false, poll.Stop(err)
		}
		return true, nil
	})

	s = openStore(t, Config{URL: url})
	createPlants(t, s, 3)
	lostRecs := shown(t, s, before, 1)
	lost := lostRecs[0].Cursor
	s.Close()

	restored := openStore(t, Config{URL: cluster.URL(copyName)})
	if restored.History() != s.History() {
		t.Fatalf("the copy's history %d, the original's %d: want one", restored.History(), s.History())
	}
	if recs, err := restored.Changes(ctx, lost, 10); !errors.Is(err, changes.ErrCursorUnknown) {
		t.Fatalf("a cursor the copy does not hold: %v, %v; want ErrCursorUnknown", recs, err)
	}
	createPlants(t, restored, 3)
	recs := shown(t, restored, before, 1)
	if recs[0].Plant.ID != 3 {
		t.Fatalf("the copy after a cursor from before it was taken: %v; want the create of 3", recs)
	}
	if recs[0].Version <= lostRecs[0].Version {
		t.Fatalf("the copy gave version %d after the original's %d: want a greater one", recs[0].Version, lostRecs[0].Version)
	}
}

// ahead is how far putLogAhead moves the log's transaction ids, beyond any
// the test cluster gives.
const ahead = 1_000_000_000

// putLogAhead makes s's log as a restore from a cluster ahead leaves it:
// its transaction ids ahead of this cluster's.
func putLogAhead(t *testing.T, s *Store) {
	t.Helper()
	for _, table := range []string{"plant_changes", "plant_heads"} {
		if _, err := s.pool.Exec(ctx, "UPDATE "+table+" SET tx = (tx::text::bigint + $1)::text::xid8", ahead); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLogOfAClusterAheadIsMovedBack: a database restored into another
// cluster (pg_dump, pg_restore on a new server) holds the old cluster's
// transaction ids, here a billion ahead of this one's. A start moves them
// back: the restored changes are shown again, in their order, a new change
// comes after them, and a follower's cursor of the old cluster, held
// nowhere now, is told to list again.
func TestLogOfAClusterAheadIsMovedBack(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	createPlants(t, s, 1, 2)
	old := shown(t, s, changes.Cursor{}, 2)
	putLogAhead(t, s)
	follower := old[1].Cursor
	follower.Tx += ahead
	s.Close()

	s = openStore(t, Config{URL: url})
	if recs, err := s.Changes(ctx, follower, 10); !errors.Is(err, changes.ErrCursorUnknown) {
		t.Fatalf("a cursor of the old cluster: %v, %v; want ErrCursorUnknown", recs, err)
	}
	createPlants(t, s, 3)
	recs := shown(t, s, changes.Cursor{}, 3)
	for i, id := range []int64{1, 2, 3} {
		if recs[i].Plant.ID != id {
			t.Fatalf("the log after the start: %v; want the creates of 1, 2, 3 in order", recs)
		}
	}
	if h := headOf(t, s); h != recs[2].Cursor {
		t.Fatalf("head %+v, want the new change's cursor %+v", h, recs[2].Cursor)
	}
}

// TestAMoveBackSparesTheChangesOfAReplicaStartedMeanwhile: two replicas
// start at once on a database restored from a cluster ahead, and both see
// the log ahead. The first moves it back, starts and writes a change; the
// second must not move that change back too (a follower that saw it would
// be told to list again, and the change would change places in the feed).
// The first replica's move and change are the test's, in a transaction
// that holds the log's writers off until the second waits for it.
func TestAMoveBackSparesTheChangesOfAReplicaStartedMeanwhile(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	createPlants(t, s, 1, 2)
	shown(t, s, changes.Cursor{}, 2)
	putLogAhead(t, s)
	s.Close()

	first, err := connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(ctx) }()
	if _, err := first.Exec(ctx, "LOCK TABLE plant_changes IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	type opened struct {
		s   *Store
		err error
	}
	secondCh := make(chan opened, 1)
	go func() {
		s, err := Open(ctx, Config{URL: url})
		secondCh <- opened{s, err}
	}()
	watcher := connect(t, url)
	poll.Wait(t, 10*time.Millisecond, 30*time.Second, "the second replica's wait for the log", func() (bool, error) {
		var waiting int
		err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'plant_changes'::regclass
AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting)
		if err != nil {
			return false, poll.Stop(err)
		}
		return waiting == 1, fmt.Errorf("%d waits for plant_changes", waiting)
	})
	if _, err := first.Exec(ctx, moveBackSQL); err != nil {
		t.Fatal(err)
	}
	var tx string
	var version int64
	if err := first.QueryRow(ctx, `INSERT INTO plant_changes (tx, version, kind, plant_id, name)
VALUES (pg_current_xact_id(), nextval('plant_versions'), $1, 3, 'p') RETURNING tx::text, version`, int16(changes.Created)).Scan(&tx, &version); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-secondCh
	if o.err != nil {
		t.Fatalf("the second replica's Open: %v", o.err)
	}
	second := o.s
	t.Cleanup(func() { second.Close() })
	mustStart(t, second)

	seen, err := cursorOf(second.History(), tx, version)
	if err != nil {
		t.Fatal(err)
	}
	if recs, err := second.Changes(ctx, seen, 10); err != nil || len(recs) != 0 {
		t.Fatalf("after the first replica's change: %v, %v; want nothing after it", recs, err)
	}
	recs := shown(t, second, changes.Cursor{}, 3)
	if got := [3][2]uint64{{recs[0].Cursor.Tx, uint64(recs[0].Plant.ID)}, {recs[1].Cursor.Tx, uint64(recs[1].Plant.ID)}, {recs[2].Cursor.Tx, uint64(recs[2].Plant.ID)}}; got != [3][2]uint64{{3, 1}, {3, 2}, {seen.Tx, 3}} {
		t.Fatalf("the feed: %v; want 1 and 2 moved back to 3, then 3 where the first replica wrote it", got)
	}
}
