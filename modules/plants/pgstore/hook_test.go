package pgstore

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The store's hook writes in the statement that inserts plants: once for
// each plant the statement created, never for an identical re-create or a
// conflict, whether the create ran alone or shared a statement, and its
// done hears exactly those ids. A hook row that fails fails the shared
// statement, whose creates then run one by one, so that only the one at
// fault fails and nothing of it is left.
func TestCreateHookWritesInTheInsertingStatement(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var statements statementCounter
	s := openStore(t, Config{URL: url, Tracer: &statements})
	if _, err := s.pool.Exec(ctx, `CREATE TABLE test_outbox (id bigint PRIMARY KEY, name text NOT NULL CHECK (name <> 'refused'))`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []int64 // the ids done heard of, from statements that ended well
	s.setHook(testHook{
		SQL: `INSERT INTO test_outbox SELECT c.id, n.name FROM created c JOIN unnest($1::bigint[], $2::text[]) AS n(id, name) ON n.id = c.id`,
		Args: func([]changes.Change) ([]any, func(map[int64]changes.Committed, error)) {
			return []any{}, func(created map[int64]changes.Committed, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					told = append(told, slices.Collect(maps.Keys(created))...)
				}
			}
		},
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
	want := []error{nil, nil, nil, plant.ErrConflict, errRefused, nil}
	for i := range want {
		if !sameError(errs[i], want[i]) {
			t.Errorf("create %d = %v, want %v", i, errs[i], want[i])
		}
	}
	if n := statements.n.Load(); n < 1 {
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
		{plant.Plant{ID: 31, Name: "refused"}, 0, errRefused},
	} {
		res, err := s.Create(ctx, w.p)
		if res != w.res || !sameError(err, w.err) {
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
	wantIDs := []int64{1, 2, 10, 11, 13, 30}
	if !slices.Equal(got, wantIDs) {
		t.Fatalf("the hook wrote entries for %v, want %v", got, wantIDs)
	}
	slices.Sort(told)
	if !slices.Equal(told, wantIDs) {
		t.Fatalf("done was told of %v, want %v", told, wantIDs)
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
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, plantsSchema)
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
// (here a serialization failure, as a dropped connection or a deadline
// would be) rolls back whole: no create of it is answered Created, each is
// answered unavailable (a 503, safe to retry), nothing is stored, and the
// hook's done hears the error.
func TestCreateHookUnavailableFailsTheWholeBatch(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var statements statementCounter
	s := openStore(t, Config{URL: url, Tracer: &statements})
	if _, err := s.pool.Exec(ctx, `CREATE TABLE test_outbox (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `CREATE FUNCTION test_not_now(n int) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
	IF n > 1 THEN RAISE EXCEPTION 'not now' USING ERRCODE = 'serialization_failure'; END IF;
	RETURN true;
END $$`); err != nil {
		t.Fatal(err)
	}
	var failures atomic.Int64
	s.setHook(testHook{ // the shared statement fails; the lanes' lone creates pass
		SQL: `INSERT INTO test_outbox SELECT id FROM created WHERE test_not_now(cardinality($1::bigint[]))`,
		Args: func([]changes.Change) ([]any, func(map[int64]changes.Committed, error)) {
			return []any{}, func(_ map[int64]changes.Committed, err error) {
				if err != nil {
					failures.Add(1)
				}
			}
		},
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
	if n := failures.Load(); n != 1 {
		t.Errorf("done heard %d failed statements, want the shared one", n)
	}
}

// testHook is a hook of the creates' own SQL (it reads created, which
// only the create statement has).
type testHook struct {
	SQL  string
	Args func(cs []changes.Change) ([]any, func(map[int64]changes.Committed, error))
}

func (h testHook) sql(int) string { return h.SQL }

func (h testHook) args(cs []changes.Change) ([]any, func(map[int64]changes.Committed, error)) {
	return h.Args(cs)
}

// errRefused stands for the check violation of a refused plant's row.
var errRefused = &pgconn.PgError{Code: "23514"}

// sameError reports whether err is want: nil for nil, a PgError of the
// same code, or errors.Is.
func sameError(err, want error) bool {
	var wantPg, pgErr *pgconn.PgError
	switch {
	case want == nil:
		return err == nil
	case errors.As(want, &wantPg):
		return errors.As(err, &pgErr) && pgErr.Code == wantPg.Code
	}
	return errors.Is(err, want)
}
