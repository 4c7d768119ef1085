package pgstore

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The tests of this file that read the change log run in TestOnAClusterAlone
// (solo_test.go): the log shows a change once every older transaction of
// the cluster has ended, whatever its database.

// changesOf reads the whole change log after a cursor.
func changesOf(t *testing.T, s *Store, after changes.Cursor) []changes.Record {
	t.Helper()
	recs, err := s.Changes(ctx, after, 1000)
	if err != nil {
		t.Fatalf("Changes(after %+v) = %v", after, err)
	}
	return recs
}

// connect opens a connection of the test's own to url, closed at its end.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// spellRecords spells records as kind and plant id.
func spellRecords(recs []changes.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Kind.String()+" "+strconv.FormatInt(r.Plant.ID, 10))
	}
	return out
}

// A create that waited for a concurrent delete of its id draws its version
// after the delete drew its own: the later change has the greater
// version. The create computes its row, then checks the id (ON CONFLICT),
// waits for the deleting transaction, and inserts the row it computed: a
// version drawn with the row would be older than the delete's. A trigger
// of the test's holds the create between the two (BEFORE INSERT triggers
// run before the check) while the delete runs, so that the order is the
// one that tells.
func testVersionOfACreateThatWaitedForADelete(t *testing.T, c *pgtest.Cluster) {
	url := c.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "old"}); err != nil {
		t.Fatal(err)
	}
	const gate = 4242 // an advisory lock the test holds, the trigger waits for
	holder, deleter := connect(t, url), connect(t, url)
	if _, err := holder.Exec(ctx, `CREATE FUNCTION test_gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_lock_shared(4242); PERFORM pg_advisory_unlock_shared(4242); RETURN NEW; END $$;
CREATE TRIGGER test_gate BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION test_gate()`); err != nil {
		t.Fatal(err)
	}
	// The trigger goes with its function (before the store closes: a create
	// held by the trigger ends once the lock is let go), and pgtest hands
	// the database to the next test rather than drop it and make another.
	t.Cleanup(func() {
		if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock_all(); DROP FUNCTION test_gate() CASCADE`); err != nil {
			t.Errorf("drop the test's trigger: %v", err)
		}
	})
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, gate); err != nil {
		t.Fatal(err)
	}
	waiting := func(event string) func() bool {
		return func() bool {
			return queryInt(t, url, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'plantstore' AND wait_event = $1`, event) == 1
		}
	}
	created := make(chan error, 1)
	go func() {
		res, err := s.Create(ctx, plant.Plant{ID: 1, Name: "new"})
		if err == nil && res != plant.Created {
			err = errors.New("not created: " + res.String())
		}
		created <- err
	}()
	waitFor(t, "the create held by the trigger", waiting("advisory"))

	// The store's own delete statement, in a transaction held open.
	tx, err := deleter.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var deletedVersion int64
	if err := tx.QueryRow(ctx, deleteStatement.plain, int64(1)).Scan(nil, &deletedVersion, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, gate); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the create waiting for the delete", waiting("transactionid"))
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatalf("Create after the delete committed = %v, want Created", err)
	}
	recs := changesOf(t, s, changes.Cursor{})
	if len(recs) != 3 || recs[1].Kind != changes.Deleted || recs[1].Version != deletedVersion || recs[2].Kind != changes.Created {
		t.Fatalf("log = %v, want created, deleted (v%d), created", spellRecords(recs), deletedVersion)
	}
	if recs[2].Version <= deletedVersion {
		t.Fatalf("the create that waited for the delete has version %d, the delete %d: want the create's greater", recs[2].Version, deletedVersion)
	}
	for i := 1; i < len(recs); i++ {
		if !recs[i-1].Cursor.Less(recs[i].Cursor) {
			t.Fatalf("cursors out of order: %+v then %+v", recs[i-1].Cursor, recs[i].Cursor)
		}
	}
}

// A transaction that took its id (at its first write) before waiting for
// another transaction's change of one of its plants commits after it: its
// change comes after that one in the feed too, with the greater version.
// Here the waiting transaction first creates an unrelated plant, as a
// batched create does, then changes plant 1, which the other transaction
// changed and holds uncommitted.
func testAChangeThatWaitedForAnotherComesAfterIt(t *testing.T, c *pgtest.Cluster) {
	replace := func(name string) (string, []any) {
		return replaceStatement.plain, []any{int64(1), name, (*string)(nil)}
	}
	create := func(name string) (string, []any) {
		return batchSQL, []any{[]int64{1}, []string{name}, []*string{nil}}
	}
	deletion := func(string) (string, []any) { return deleteStatement.plain, []any{int64(1)} }
	for _, tc := range []struct {
		name          string
		first, second func(name string) (string, []any)
		want          []string // plant 1's changes in feed order
	}{
		{"create after delete", deletion, create, []string{"plant.created 1", "plant.deleted 1", "plant.created 1"}},
		{"replace after replace", replace, replace, []string{"plant.created 1", "plant.updated 1", "plant.updated 1"}},
		{"delete after replace", replace, deletion, []string{"plant.created 1", "plant.updated 1", "plant.deleted 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := c.NewMigratedDatabase(t, plantsSchema)
			s := openStore(t, Config{URL: url})
			if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "old"}); err != nil {
				t.Fatal(err)
			}
			waiterConn, otherConn := connect(t, url), connect(t, url)
			waiter, err := waiterConn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = waiter.Rollback(ctx) }()
			// The waiting transaction's first write gives it the older id.
			if _, err := waiter.Exec(ctx, batchSQL, []int64{2}, []string{"unrelated"}, []*string{nil}); err != nil {
				t.Fatal(err)
			}
			other, err := otherConn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = other.Rollback(ctx) }()
			sql, args := tc.first("other")
			if tag, err := other.Exec(ctx, sql, args...); err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("the other transaction's change = %v, %v; want one row", tag, err)
			}
			done := make(chan error, 1)
			go func() {
				sql, args := tc.second("waiter")
				tag, err := waiter.Exec(ctx, sql, args...)
				if err == nil && tag.RowsAffected() != 1 {
					err = errors.New("the waiting change changed nothing: " + tag.String())
				}
				done <- err
			}()
			waitFor(t, "the change waiting for the other transaction", func() bool {
				return queryInt(t, url, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'transactionid'`,
					waiterConn.PgConn().PID()) == 1
			})
			if err := other.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := waiter.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var ofPlant []changes.Record
			for _, r := range changesOf(t, s, changes.Cursor{}) {
				if r.Plant.ID == 1 {
					ofPlant = append(ofPlant, r)
				}
			}
			if got := spellRecords(ofPlant); !slices.Equal(got, tc.want) {
				t.Fatalf("plant 1's changes in feed order: %v, want %v", got, tc.want)
			}
			for i := 1; i < len(ofPlant); i++ {
				if ofPlant[i].Version <= ofPlant[i-1].Version || !ofPlant[i-1].Cursor.Less(ofPlant[i].Cursor) {
					t.Fatalf("plant 1's change %d (version %d, cursor %+v) after version %d, cursor %+v: want both greater",
						i, ofPlant[i].Version, ofPlant[i].Cursor, ofPlant[i-1].Version, ofPlant[i-1].Cursor)
				}
			}
		})
	}
}

// The pruner removes the plant heads below every running transaction's
// id, and keeps those a change to come may still need.
func testPruneHeadsKeepsWhatARunningTransactionNeeds(t *testing.T, c *pgtest.Cluster) {
	url := c.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	for id := int64(1); id <= 3; id++ {
		if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "fern"}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	running, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = running.Rollback(ctx) }()
	if _, err := running.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil { // takes an id
		t.Fatal(err)
	}
	if err := s.Delete(ctx, 2); err != nil { // a head above the running transaction's id
		t.Fatal(err)
	}
	if n, err := s.pruneHeads(ctx); err != nil || n != 2 {
		t.Fatalf("pruneHeads with a transaction running = %d, %v; want the 2 heads below it removed", n, err)
	}
	if n := queryInt(t, url, `SELECT count(*) FROM plant_heads WHERE plant_id = 2`); n != 1 {
		t.Fatalf("the deleted plant's head: %d rows, want it kept while an older transaction runs", n)
	}
	if err := running.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.pruneHeads(ctx); err != nil || n != 1 {
		t.Fatalf("pruneHeads after = %d, %v; want the last head removed", n, err)
	}
	if n := queryInt(t, url, `SELECT count(*) FROM plant_heads`); n != 0 {
		t.Fatalf("%d heads left, want none", n)
	}
}

// A change in a transaction still open, older than changes committed
// since, hides them from Changes (and Head) until it ends: then they all
// appear, after the cursor a follower already had, in cursor order, none
// skipped.
func testAnOpenOlderTransactionHidesLaterChanges(t *testing.T, c *pgtest.Cluster) {
	url := c.NewMigratedDatabase(t, plantsSchema)
	s := openStore(t, Config{URL: url})
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "before"}); err != nil {
		t.Fatal(err)
	}
	seen := changesOf(t, s, changes.Cursor{})
	if len(seen) != 1 {
		t.Fatalf("log = %+v, want the first create", seen)
	}
	follower := seen[0].Cursor

	older, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Close(ctx)
	tx, err := older.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The store's create statement, for plant 2, uncommitted.
	if _, err := tx.Exec(ctx, batchSQL, []int64{2}, []string{"slow"}, []*string{nil}); err != nil {
		t.Fatal(err)
	}
	for id := int64(3); id <= 4; id++ {
		if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "after"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Replace(ctx, plant.Plant{ID: 1, Name: "replaced"}, nil); err != nil {
		t.Fatal(err)
	}
	if recs := changesOf(t, s, follower); len(recs) != 0 {
		t.Fatalf("while an older transaction is open: %v after the follower's cursor, want none", spellRecords(recs))
	}
	if h, err := s.Head(ctx); err != nil || h != follower {
		t.Fatalf("Head while an older transaction is open = %+v, %v; want the follower's %+v", h, err, follower)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	recs := changesOf(t, s, follower)
	got := spellRecords(recs)
	want := []string{"plant.created 2", "plant.created 3", "plant.created 4", "plant.updated 1"}
	if len(got) != len(want) {
		t.Fatalf("after the older transaction committed: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after the older transaction committed: %v, want %v", got, want)
		}
		if i > 0 && !recs[i-1].Cursor.Less(recs[i].Cursor) {
			t.Fatalf("cursors out of order: %+v then %+v", recs[i-1].Cursor, recs[i].Cursor)
		}
	}
	if !follower.Less(recs[0].Cursor) {
		t.Fatalf("the older transaction's change %+v is not after the follower's cursor %+v", recs[0].Cursor, follower)
	}
	if h, err := s.Head(ctx); err != nil || h != recs[3].Cursor {
		t.Fatalf("Head = %+v, %v; want the newest change's %+v", h, err, recs[3].Cursor)
	}
}

// Wait wakes at a change committed by another replica: each store holds a
// LISTEN connection, connected again when it is lost, and a change is
// notified once committed. In parallel with other tests: it reads no
// change log, and notifications stay in their database.
func TestWaitWakesAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
	writer := openStore(t, Config{URL: url})
	follower := openStore(t, Config{URL: url + "&application_name=follower"})
	for _, s := range []*Store{writer, follower} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the follower's listener", func() bool { return follower.Stats().ChangeListens == 1 })
	for i, write := range []func() error{
		func() error { _, err := writer.Create(ctx, plant.Plant{ID: 1, Name: "one"}); return err },
		func() error { return writer.Replace(ctx, plant.Plant{ID: 1, Name: "uno"}, nil) },
		func() error { return writer.Delete(ctx, 1) },
		func() error { _, err := writer.Create(ctx, plant.Plant{ID: 1, Name: "one again"}); return err },
	} {
		if i == 3 {
			// The listener's connection is lost: it connects again (and
			// wakes its waiters then, who may have missed a change).
			if n := queryInt(t, url, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'follower listener'`); n != 1 {
				t.Fatalf("terminated %d listeners, want the follower's", n)
			}
			waitFor(t, "the follower's listener again", func() bool { return follower.Stats().ChangeListens == 2 })
		}
		woken := follower.Wait()
		if err := write(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
		case <-time.After(10 * time.Second): // a bound for the notification's trip, not a speed check
			t.Fatalf("change %d: the follower's Wait did not wake at another replica's change", i+1)
		}
	}
	if n := follower.Stats().ChangeListens; n != 2 {
		t.Fatalf("the follower listened %d times, want twice (one reconnect)", n)
	}
}

// A replace with the content stored writes nothing: no row version, no
// record, and it succeeds.
func testIdenticalReplaceWritesNothing(t *testing.T, c *pgtest.Cluster) {
	s := openStore(t, Config{URL: c.NewMigratedDatabase(t, plantsSchema)})
	fern := plant.Plant{ID: 1, Name: "fern", Tag: plant.StringPtr("green")}
	if _, err := s.Create(ctx, fern); err != nil {
		t.Fatal(err)
	}
	version := func() string {
		var v string
		if err := s.pool.QueryRow(ctx, `SELECT xmin::text FROM plants WHERE id = 1`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	if err := s.Replace(ctx, fern, nil); err != nil {
		t.Fatalf("identical Replace = %v, want success", err)
	}
	if err := s.Replace(ctx, fern, &fern); err != nil {
		t.Fatalf("identical Replace matching it = %v, want success", err)
	}
	if after := version(); after != before {
		t.Fatalf("the row's version went from %s to %s: an identical PUT rewrote it", before, after)
	}
	if recs := changesOf(t, s, changes.Cursor{}); len(recs) != 1 {
		t.Fatalf("log = %v, want the create alone", spellRecords(recs))
	}
}

// The plan's rows for a replace or a delete are written in the change's
// statement: a statement that fails (here on the plan's own rows, two
// with one webhook-id) commits neither the change nor its record nor any
// row, and the plan hears the error.
func testPlanRowsOfAFailedChangeAreNotWritten(t *testing.T, c *pgtest.Cluster) {
	s := openStore(t, Config{URL: c.NewMigratedDatabase(t, plantsSchema)})
	type told struct {
		committed map[int64]changes.Committed
		err       error
	}
	var heard []told
	duplicate := false
	s.Outbox().OnChange(hour, outbox.PlanFunc(func(cs []changes.Change, _ bool) ([]outbox.Row, func(map[int64]changes.Committed, error)) {
		var rows []outbox.Row
		for _, c := range cs {
			id := outbox.NewID()
			rows = append(rows, outbox.Row{ID: id, Plant: c.Plant(), Kind: c.Kind, Endpoint: "a", Event: event(int(c.Plant()))})
			if duplicate {
				rows = append(rows, outbox.Row{ID: id, Plant: c.Plant(), Kind: c.Kind, Endpoint: "b", Event: event(int(c.Plant()))})
			}
		}
		return rows, func(committed map[int64]changes.Committed, err error) { heard = append(heard, told{committed, err}) }
	}))
	fern := plant.Plant{ID: 1, Name: "fern"}
	if _, err := s.Create(ctx, fern); err != nil {
		t.Fatal(err)
	}
	duplicate = true
	if err := s.Replace(ctx, plant.Plant{ID: 1, Name: "ivy"}, nil); err == nil {
		t.Fatal("Replace whose rows share a webhook-id succeeded")
	}
	if err := s.Delete(ctx, 1); err == nil {
		t.Fatal("Delete whose rows share a webhook-id succeeded")
	}
	if got, err := s.Get(ctx, 1); err != nil || !got.Equal(fern) {
		t.Fatalf("Get after the failed changes = %+v, %v; want %+v", got, err, fern)
	}
	if recs := changesOf(t, s, changes.Cursor{}); len(recs) != 1 {
		t.Fatalf("log = %v, want the create alone", spellRecords(recs))
	}
	if n := queryInt(t, s.pool.Config().ConnString(), `SELECT count(*) FROM webhook_deliveries`); n != 1 {
		t.Fatalf("%d deliveries written, want the create's alone", n)
	}
	if len(heard) != 3 || heard[0].err != nil || len(heard[0].committed) != 1 ||
		heard[1].err == nil || len(heard[1].committed) != 0 || heard[2].err == nil || len(heard[2].committed) != 0 {
		t.Fatalf("the plan heard %+v, want the create committed, then two errors", heard)
	}
	// Committed is the statement's: the record's version and time.
	recs := changesOf(t, s, changes.Cursor{})
	if c := heard[0].committed[1]; c.Version != recs[0].Version || !c.At.Equal(recs[0].At) {
		t.Fatalf("the plan heard %+v for the create, the log has version %d at %v", c, recs[0].Version, recs[0].At)
	}

	// Replace and Delete that commit: their rows carry their kinds and versions.
	duplicate = false
	if err := s.Replace(ctx, plant.Plant{ID: 1, Name: "ivy"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, 1); err != nil {
		t.Fatal(err)
	}
	recs = changesOf(t, s, changes.Cursor{})
	ds := claim(t, s.Outbox(), "a", 10, hour)
	if len(ds) != 3 || len(recs) != 3 {
		t.Fatalf("claimed %d deliveries, log of %d, want 3 of each", len(ds), len(recs))
	}
	for _, d := range ds {
		found := false
		for _, r := range recs {
			found = found || (r.Version == d.Version && r.Kind == d.Kind && r.At.Equal(d.CreatedAt))
		}
		if !found {
			t.Errorf("delivery %s v%d at %v matches no record", d.Kind, d.Version, d.CreatedAt)
		}
	}
}

// The head is the log's greatest (tx, version) by number: of the
// transaction ids 9, 10 and 100, the greatest is 100, where their text
// would give "9". A log holds ids of different lengths whenever the
// cluster's ids pass a power of ten, and after a start moved a restored
// log back to the frozen id 3 (history.go). The ids are written here, so
// that the test does not depend on how far the shared cluster's ids have
// come (past 100 in any case: initdb alone takes several hundred).
func TestHeadIsTheGreatestTransactionIdByNumber(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema)})
	if _, err := s.pool.Exec(ctx, `INSERT INTO plant_changes (tx, version, kind, plant_id, name)
VALUES ('9', 1, $1, 1, 'a'), ('10', 2, $1, 2, 'b'), ('100', 3, $1, 3, 'c')`, int16(changes.Created)); err != nil {
		t.Fatal(err)
	}
	want := changes.Cursor{History: s.History(), Tx: 100, Version: 3}
	if h, err := s.Head(ctx); err != nil || h != want {
		t.Fatalf("Head = %+v, %v; want %+v", h, err, want)
	}
	var txs []uint64
	for _, r := range changesOf(t, s, changes.Cursor{}) {
		txs = append(txs, r.Cursor.Tx)
	}
	if !slices.Equal(txs, []uint64{9, 10, 100}) {
		t.Fatalf("the log's transaction ids in the feed: %v; want 9, 10, 100", txs)
	}
}

// A cursor older than the retention is gone once the store's pruner has
// run: Start spawns it, ChangesRetention sets its window. In parallel with
// other tests: pruning, a gone cursor and the head after it do not depend
// on the cluster's other transactions (the log's only change is pruned).
func TestThePrunerRemovesOldChanges(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema), ChangesRetention: 50 * time.Millisecond})
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pruner", func() bool {
		_, err := s.Changes(ctx, changes.Cursor{}, 10)
		return errors.Is(err, changes.ErrCursorGone)
	})
	h, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if recs := changesOf(t, s, h); len(recs) != 0 {
		t.Fatalf("after the head of a pruned log: %v", spellRecords(recs))
	}
}

// A zero retention (--changes-retention=0) keeps every change: the
// pruner's round removes nothing from the log, however old.
func TestZeroRetentionKeepsEveryChange(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{URL: pgtest.NewMigratedDatabase(t, plantsSchema), ChangesRetention: 0})
	if _, err := s.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE plant_changes SET at = at - interval '1000 days'`); err != nil {
		t.Fatal(err)
	}
	// Shown once the cluster's older transactions (other tests') end;
	// once shown, it stays shown.
	waitFor(t, "the change shown", func() bool { return len(changesOf(t, s, changes.Cursor{})) == 1 })
	s.prune(ctx, time.Now())
	recs, err := s.Changes(ctx, changes.Cursor{}, 10)
	if err != nil || len(recs) != 1 || recs[0].Plant.Name != "fern" {
		t.Fatalf("after a prune of a change 1000 days old: %v, %v; want it kept", spellRecords(recs), err)
	}
}
