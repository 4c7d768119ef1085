package pgstore

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The CreateHook writes in the transaction that inserts plants: once for
// each plant a statement created, never for an identical re-create or a
// conflict, whether the create ran alone or shared a statement. A hook
// that fails fails the shared statement, whose creates then run one by
// one, so that only the one at fault fails and nothing of it is left.
func TestCreateHookWritesInTheInsertingTransaction(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := openStore(t, Config{URL: url})
	if _, err := s.pool.Exec(ctx, `CREATE TABLE test_outbox (id bigint PRIMARY KEY, name text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	s.OnCreate(func(ctx context.Context, tx pgx.Tx, created []Created) error {
		ids, names := make([]int64, len(created)), make([]string, len(created))
		for i, c := range created {
			p := c.Plant
			if p.Name == "refused" {
				return boom
			}
			ids[i], names[i] = p.ID, p.Name
		}
		_, err := tx.Exec(ctx, `INSERT INTO test_outbox SELECT * FROM unnest($1::bigint[], $2::text[])`, ids, names)
		return err
	})

	fern := plant.Plant{ID: 10, Name: "fern"}
	errs := createBehindBusyLanes(t, s, url, []plant.Plant{
		fern,
		{ID: 11, Name: "moss"},
		fern,                  // identical: no entry
		{ID: 10, Name: "ivy"}, // conflict: no entry
		{ID: 12, Name: "refused"},
		{ID: 13, Name: "palm"},
	})
	want := []error{nil, nil, nil, plant.ErrConflict, boom, nil}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil && errs[i] != nil) {
			t.Errorf("create %d = %v, want %v", i, errs[i], want[i])
		}
	}
	if n := s.creates.statements.Load(); n < 1 {
		t.Errorf("%d multi-row statements, want the batch's", n)
	}
	// Alone: the single-row statement in a transaction with the hook.
	for _, w := range []struct {
		p   plant.Plant
		res plant.CreateResult
		err error
	}{
		{plant.Plant{ID: 30, Name: "oak"}, plant.Created, nil},
		{plant.Plant{ID: 30, Name: "oak"}, plant.Unchanged, nil},
		{plant.Plant{ID: 30, Name: "elm"}, 0, plant.ErrConflict},
		{plant.Plant{ID: 31, Name: "refused"}, 0, boom},
	} {
		res, err := s.Create(ctx, w.p)
		if res != w.res || !errors.Is(err, w.err) || (w.err == nil && err != nil) {
			t.Errorf("Create(%+v) = %v, %v; want %v, %v", w.p, res, err, w.res, w.err)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM test_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	// 1 and 2 are the creates that held the lanes busy.
	if wantIDs := []int64{1, 2, 10, 11, 13, 30}; !slices.Equal(got, wantIDs) {
		t.Fatalf("the hook wrote entries for %v, want %v", got, wantIDs)
	}
	for _, id := range []int64{12, 31} {
		if _, err := s.Get(ctx, id); !errors.Is(err, plant.ErrNotFound) {
			t.Errorf("Get(%d) of a refused create = %v, want ErrNotFound", id, err)
		}
	}
}

// An identical re-create writes nothing: the row keeps its version (xmin),
// whether the retry runs alone or shares a statement. (Rewriting it would
// cost a row version and WAL per client retry.)
func TestIdenticalRecreateLeavesTheRowAlone(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := openStore(t, Config{URL: url})
	fern := plant.Plant{ID: 10, Name: "fern", Tag: plant.StringPtr("green")}
	moss := plant.Plant{ID: 11, Name: "moss"}
	for _, p := range []plant.Plant{fern, moss} {
		if res, err := s.Create(ctx, p); res != plant.Created || err != nil {
			t.Fatalf("Create(%+v) = %v, %v", p, res, err)
		}
	}
	version := func() string {
		var v string
		if err := s.pool.QueryRow(ctx, `SELECT string_agg(xmin::text, ',' ORDER BY id) FROM plants WHERE id IN (10, 11)`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	if res, err := s.Create(ctx, fern); res != plant.Unchanged || err != nil {
		t.Fatalf("identical Create alone = %v, %v; want unchanged", res, err)
	}
	for i, err := range createBehindBusyLanes(t, s, url, []plant.Plant{fern, moss, {ID: 12, Name: "new"}}) {
		if err != nil {
			t.Fatalf("queued create %d = %v", i, err)
		}
	}
	if after := version(); after != before {
		t.Fatalf("the rows' versions went from %s to %s: a retry rewrote them", before, after)
	}
}

// A shared statement whose hook fails in a way that is no fault of its rows
// (here a deadline, as a dropped connection or a serialization failure
// would be) rolls back whole: no create of it is answered Created, each is
// answered unavailable (a 503, safe to retry), and nothing is stored.
func TestCreateHookUnavailableFailsTheWholeBatch(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := openStore(t, Config{URL: url})
	s.OnCreate(func(_ context.Context, _ pgx.Tx, created []Created) error {
		if len(created) > 1 { // the shared statement; the lanes' lone creates pass
			return context.DeadlineExceeded
		}
		return nil
	})
	batch := []plant.Plant{{ID: 20, Name: "a"}, {ID: 21, Name: "b"}, {ID: 22, Name: "c"}}
	for i, err := range createBehindBusyLanes(t, s, url, batch) {
		if !errors.Is(err, plant.ErrUnavailable) {
			t.Errorf("create %d = %v, want ErrUnavailable", i, err)
		}
	}
	for _, p := range batch {
		if _, err := s.Get(ctx, p.ID); !errors.Is(err, plant.ErrNotFound) {
			t.Errorf("Get(%d) after the rolled-back statement = %v, want ErrNotFound", p.ID, err)
		}
	}
}
