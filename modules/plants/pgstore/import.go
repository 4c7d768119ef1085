package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The bulk import's batches (CreateBatch) are loaded the way PostgreSQL
// loads fastest: COPY into a staging table, then one set-based statement
// that does for all of them what a create does for one (the plant, its
// change, its head and the outbox's rows, changeSQL's parts), then one
// read of what the ids it did not create hold. All of it is one
// transaction: a crash leaves the batch's plants all stored, each with its
// change and events, or none, and an import sent again answers the ones
// stored unchanged.

const (
	// stagingSQL is the batch's staging table: temporary, so it is
	// written without WAL, and dropped at the commit, so that a pooled
	// connection keeps nothing of the import's.
	stagingSQL = `CREATE TEMPORARY TABLE plant_import (id bigint NOT NULL, name text NOT NULL, tag text) ON COMMIT DROP`
	// importCTE is the first part of the import statement (see changeSQL):
	// the staged plants whose id is free, inserted in id order so that
	// the statement takes its row locks in the order every create
	// statement does, and two that share ids wait for each other rather
	// than deadlock.
	importCTE = `WITH created AS (INSERT INTO plants (id, name, tag)
SELECT id, name, tag FROM plant_import ORDER BY id
ON CONFLICT (id) DO NOTHING
RETURNING id, name, tag)`
)

var (
	stagingTable   = pgx.Identifier{"plant_import"}
	stagingColumns = []string{"id", "name", "tag"}
	// importSQL is the import statement without the hook's writes.
	importSQL = changeSQL(importCTE, "created", changes.Created, "")
)

var _ plant.BatchCreator = (*Store)(nil)

// CreateBatch implements plant.BatchCreator, in one transaction (see
// above). The plants whose id was taken are read durably, as storedSQL
// reads a shared create's, and answered unchanged or as a conflict with
// the plant stored; one deleted between the insert and that read is
// created again after the commit, alone, as a shared create's is.
func (s *Store) CreateBatch(ctx context.Context, ps []plant.Plant) ([]plant.BatchResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	// ON CONFLICT DO NOTHING would skip the second of two rows with one
	// id silently: the caller's promise is checked.
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return nil, fmt.Errorf("postgres: a batch creates plant %d twice", ids[i])
		}
	}
	creating := make([]changes.Change, len(ps))
	for i, p := range ps {
		creating[i] = changes.Change{Ctx: ctx, Kind: changes.Created, After: p}
	}
	var (
		created map[int64]changes.Committed
		stored  map[int64]plant.Plant
	)
	err := s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		var err error
		created, stored, err = s.importBatch(ctx, conn, ps, creating)
		return err
	})
	if err != nil {
		return nil, failed("create batch", err)
	}
	results := make([]plant.BatchResult, len(ps))
	for i, p := range ps {
		if _, ok := created[p.ID]; ok {
			results[i] = plant.BatchResult{Result: plant.Created}
			continue
		}
		switch old, ok := stored[p.ID]; {
		case !ok: // deleted since the insert: the id is free again
			result, err := s.Create(ctx, p)
			results[i] = plant.BatchResult{Result: result, Err: err}
			if errors.Is(err, plant.ErrConflict) {
				// Taken again since: its plant, as a create's conflict
				// in an import is answered.
				old, gerr := s.Get(ctx, p.ID)
				results[i].Stored = old
				if gerr != nil {
					results[i].Err = gerr
				}
			}
		case old.Equal(p):
			results[i] = plant.BatchResult{Result: plant.Unchanged}
		default:
			results[i] = plant.BatchResult{Err: plant.ErrConflict, Stored: old}
		}
	}
	return results, nil
}

// importBatch runs the batch's transaction on conn and returns the ids it
// created, with what their changes were given, and the plants stored
// under the others. The hook hears the outcome once the commit's is known,
// and the followers are woken after it.
func (s *Store) importBatch(ctx context.Context, conn *pgx.Conn, ps []plant.Plant, creating []changes.Change) (created map[int64]changes.Committed, stored map[int64]plant.Plant, err error) {
	sql, args := importSQL, []any(nil)
	var done func(map[int64]changes.Committed, error)
	if s.hook != nil {
		var hookArgs []any
		if hookArgs, done = s.hook.args(creating); hookArgs != nil {
			sql, args = changeSQL(importCTE, "created", changes.Created, s.hook.sql(1)), hookArgs
		}
	}
	err = replicated(conn, func(conn *pgx.Conn) error {
		created, stored, err = loadBatch(ctx, conn, ps, sql, args)
		return err
	})
	if err != nil {
		created, stored = nil, nil
	}
	if len(created) > 0 {
		s.announce()
	}
	if done != nil {
		done(created, err)
	}
	return created, stored, err
}

// loadBatch is the batch's transaction: the staging table, the COPY, the
// import statement and the read of the ids taken.
func loadBatch(ctx context.Context, conn *pgx.Conn, ps []plant.Plant, sql string, args []any) (created map[int64]changes.Committed, stored map[int64]plant.Plant, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err = tx.Exec(ctx, stagingSQL); err != nil {
		return nil, nil, err
	}
	if _, err = tx.CopyFrom(ctx, stagingTable, stagingColumns, pgx.CopyFromSlice(len(ps), func(i int) ([]any, error) {
		return []any{ps[i].ID, ps[i].Name, ps[i].Tag}, nil
	})); err != nil {
		return nil, nil, err
	}
	if created, err = queryCommitted(ctx, tx.Conn(), sql, args, len(ps)); err != nil {
		return nil, nil, err
	}
	if len(created) < len(ps) {
		taken := make([]int64, 0, len(ps)-len(created))
		for _, p := range ps {
			if _, ok := created[p.ID]; !ok {
				taken = append(taken, p.ID)
			}
		}
		if stored, err = readTaken(ctx, tx, taken); err != nil {
			return nil, nil, err
		}
	}
	return created, stored, tx.Commit(ctx)
}

// readTaken reads the plants stored under ids, locked until the commit
// (see storedSQL).
func readTaken(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]plant.Plant, error) {
	rows, err := tx.Query(ctx, storedSQL, ids)
	if err != nil {
		return nil, err
	}
	stored := make(map[int64]plant.Plant, len(ids))
	var p plant.Plant
	_, err = pgx.ForEachRow(rows, []any{&p.ID, &p.Name, &p.Tag}, func() error {
		stored[p.ID] = p
		p.Tag = nil // the next row's tag gets a pointer of its own
		return nil
	})
	return stored, err
}
