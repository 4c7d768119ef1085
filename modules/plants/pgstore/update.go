package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A conditional write is one statement whose WHERE compares the stored row
// with the plant the caller read: PostgreSQL re-checks that condition on
// the newest version of a row it had to wait for (READ COMMITTED), so of
// two updates made against one state the second matches no row. Which
// answer "no row" is (missing plant, stale precondition, or for a replace
// the content stored already) is read after, durably (see durableGetSQL):
// a 412 is given on a row as durable as a fresh commit. Each write is a
// change statement (see statement.go).
const existsSQL = `SELECT 1 FROM plants WHERE id = $1 FOR KEY SHARE`

// Replace implements plant.Store. Its statements run as a commit (see
// commit.go): the call deadline answers the caller and leaves them to
// finish. A replace with the content stored succeeds and changes nothing:
// no version, no log record, no event.
func (s *Store) Replace(ctx context.Context, p plant.Plant, match *plant.Plant) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	before := plant.Plant{ID: p.ID}
	st, args := replaceStatement, []any{p.ID, p.Name, p.Tag}
	if match != nil {
		before = plant.Plant{ID: p.ID, Name: match.Name, Tag: match.Tag}
		st, args = replaceMatchingStatement, append(args, match.Name, match.Tag)
	}
	changes := []changes.Change{{Ctx: ctx, Kind: changes.Replaced, Before: before, After: p}}
	var answer error
	err := s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		for {
			committed, err := s.change(ctx, conn, st, args, changes)
			if err != nil || len(committed) > 0 {
				return err
			}
			var again bool
			if answer, again, err = whyNoChange(ctx, conn, p, match); err != nil || !again {
				return err
			}
		}
	})
	if err != nil {
		return failed("update", err)
	}
	return answer
}

// DeleteMatching implements plant.Store, as a commit like Replace.
func (s *Store) DeleteMatching(ctx context.Context, match plant.Plant) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	changes := []changes.Change{{Ctx: ctx, Kind: changes.Deleted, Before: match}}
	var answer error
	err := s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		committed, err := s.change(ctx, conn, deleteMatchingStatement, []any{match.ID, match.Name, match.Tag}, changes)
		if err == nil && len(committed) == 0 {
			answer, err = whyNoRow(ctx, conn, match.ID)
		}
		return err
	})
	if err != nil {
		return failed("delete", err)
	}
	return answer
}

// whyNoChange names the answer of a replace that changed no row: the plant
// is missing, or it differs from the precondition, or it has p's content
// already (and matches the precondition): then the replace succeeded,
// changing nothing. A plant changed between the two statements (created,
// or replaced from p's content) is replaced again (again). Its statements
// commit, and run inside the caller's check of the canceled wait's
// warning.
func whyNoChange(ctx context.Context, conn *pgx.Conn, p plant.Plant, match *plant.Plant) (answer error, again bool, err error) {
	stored := plant.Plant{ID: p.ID}
	err = conn.QueryRow(ctx, durableGetSQL, p.ID).Scan(&stored.Name, &stored.Tag)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return plant.ErrNotFound, false, barrier(ctx, conn)
	case err != nil:
		return nil, false, err
	case match != nil && !stored.Equal(plant.Plant{ID: p.ID, Name: match.Name, Tag: match.Tag}):
		return plant.ErrPreconditionFailed, false, nil
	case stored.Equal(p):
		return nil, false, nil
	}
	return nil, true, nil
}

// whyNoRow names the answer of a conditional delete that matched no row:
// the plant is missing, or it is there and differs from the precondition.
// Its statements commit, and run inside the caller's check of the
// canceled wait's warning.
func whyNoRow(ctx context.Context, conn *pgx.Conn, id int64) (answer, err error) {
	var one int
	err = conn.QueryRow(ctx, existsSQL, id).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return plant.ErrNotFound, barrier(ctx, conn)
	case err != nil:
		return nil, err
	}
	return plant.ErrPreconditionFailed, nil
}

// barrier commits readBarrierSQL on conn: with synchronous standbys, once
// it returns they hold every commit that conn's statements before it saw.
// A 404 decided on a missing row waits for it, as a read does: the delete
// that made the row missing may be on the primary only.
func barrier(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, readBarrierSQL)
	return err
}
