package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A conditional write is one statement whose WHERE compares the stored row
// with the plant the caller read: PostgreSQL re-checks that condition on
// the newest version of a row it had to wait for (READ COMMITTED), so of
// two updates made against one state the second matches no row. Which
// answer "no row" is (missing plant or stale precondition) is read after,
// durably (see durableGetSQL): a 412 is given on a row as durable as a
// fresh commit.
const (
	updateSQL         = `UPDATE plants SET name = $2, tag = $3 WHERE id = $1`
	updateMatchingSQL = `UPDATE plants SET name = $2, tag = $3 WHERE id = $1 AND name = $4 AND tag IS NOT DISTINCT FROM $5`
	deleteMatchingSQL = `DELETE FROM plants WHERE id = $1 AND name = $2 AND tag IS NOT DISTINCT FROM $3`
	existsSQL         = `SELECT 1 FROM plants WHERE id = $1 FOR KEY SHARE`
)

// Replace implements plant.Store. Its statements run as a commit (see
// commit.go): the call deadline answers the caller and leaves them to
// finish.
func (s *Store) Replace(ctx context.Context, p plant.Plant, match *plant.Plant) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	var answer error
	err := s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		if match == nil {
			tag, err := conn.Exec(ctx, updateSQL, p.ID, p.Name, p.Tag)
			if err == nil && tag.RowsAffected() == 0 {
				answer, err = plant.ErrNotFound, barrier(ctx, conn)
			}
			return err
		}
		tag, err := conn.Exec(ctx, updateMatchingSQL, p.ID, p.Name, p.Tag, match.Name, match.Tag)
		if err == nil && tag.RowsAffected() == 0 {
			answer, err = whyNoRow(ctx, conn, p.ID)
		}
		return err
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
	var answer error
	err := s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		tag, err := conn.Exec(ctx, deleteMatchingSQL, match.ID, match.Name, match.Tag)
		if err == nil && tag.RowsAffected() == 0 {
			answer, err = whyNoRow(ctx, conn, match.ID)
		}
		return err
	})
	if err != nil {
		return failed("delete", err)
	}
	return answer
}

// whyNoRow names the answer of a conditional write that matched no row:
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
