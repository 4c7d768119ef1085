package pgstore

import (
	"context"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// A conditional write is one statement whose WHERE compares the stored row
// with the plant the caller read: PostgreSQL re-checks that condition on
// the newest version of a row it had to wait for (READ COMMITTED), so of
// two updates made against one state the second matches no row. Which
// answer "no row" is (missing plant or stale precondition) is read after.
const (
	updateSQL         = `UPDATE plants SET name = $2, tag = $3 WHERE id = $1`
	updateMatchingSQL = `UPDATE plants SET name = $2, tag = $3 WHERE id = $1 AND name = $4 AND tag IS NOT DISTINCT FROM $5`
	deleteMatchingSQL = `DELETE FROM plants WHERE id = $1 AND name = $2 AND tag IS NOT DISTINCT FROM $3`
	existsSQL         = `SELECT EXISTS (SELECT 1 FROM plants WHERE id = $1)`
)

// Replace implements plant.Store.
func (s *Store) Replace(ctx context.Context, p plant.Plant, match *plant.Plant) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	if match == nil {
		tag, err := s.pool.Exec(ctx, updateSQL, p.ID, p.Name, p.Tag)
		if err != nil {
			return failed("update", err)
		}
		if tag.RowsAffected() == 0 {
			return plant.ErrNotFound
		}
		return nil
	}
	tag, err := s.pool.Exec(ctx, updateMatchingSQL, p.ID, p.Name, p.Tag, match.Name, match.Tag)
	if err != nil {
		return failed("update", err)
	}
	if tag.RowsAffected() == 0 {
		return s.whyNoRow(ctx, p.ID)
	}
	return nil
}

// DeleteMatching implements plant.Store.
func (s *Store) DeleteMatching(ctx context.Context, match plant.Plant) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	tag, err := s.pool.Exec(ctx, deleteMatchingSQL, match.ID, match.Name, match.Tag)
	if err != nil {
		return failed("delete", err)
	}
	if tag.RowsAffected() == 0 {
		return s.whyNoRow(ctx, match.ID)
	}
	return nil
}

// whyNoRow names the answer of a conditional write that matched no row:
// the plant is missing, or it is there and differs from the precondition.
func (s *Store) whyNoRow(ctx context.Context, id int64) error {
	var exists bool
	if err := s.pool.QueryRow(ctx, existsSQL, id).Scan(&exists); err != nil {
		return failed("update", err)
	}
	if exists {
		return plant.ErrPreconditionFailed
	}
	return plant.ErrNotFound
}
