package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/endpointstore"
)

// Endpoints is the store's endpointstore.Store, in the plants database
// (migration 0006), shared by every replica: each write raises the one
// version row in its transaction, which every replica's sender polls.
type Endpoints struct{ store *Store }

// Endpoints returns the store's webhook endpoints.
func (s *Store) Endpoints() endpointstore.Store { return &Endpoints{store: s} }

const (
	pgListEndpointsSQL = `SELECT doc FROM webhook_endpoints WHERE id > $1 ORDER BY id LIMIT $2`
	pgGetEndpointSQL   = `SELECT doc FROM webhook_endpoints WHERE id = $1`
	pgRevisionSQL      = `SELECT revision FROM webhook_endpoints WHERE id = $1 FOR UPDATE`
	pgInsertEndpoint   = `INSERT INTO webhook_endpoints (id, revision, doc) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`
	pgUpdateEndpoint   = `UPDATE webhook_endpoints SET revision = $2, doc = $3 WHERE id = $1`
	pgDeleteEndpoint   = `DELETE FROM webhook_endpoints WHERE id = $1`
	pgBumpEndpoints    = `INSERT INTO webhook_endpoints_version (one, version) VALUES (true, 1)
ON CONFLICT (one) DO UPDATE SET version = webhook_endpoints_version.version + 1`
	pgEndpointsVersion = `SELECT coalesce((SELECT version FROM webhook_endpoints_version), 0)`
)

// ListEndpoints implements endpointstore.Store.
func (e *Endpoints) ListEndpoints(ctx context.Context, after string, limit int) ([]endpointstore.Endpoint, error) {
	rows, err := e.store.pool.Query(ctx, pgListEndpointsSQL, after, limit)
	if err != nil {
		return nil, failed("list webhook endpoints", err)
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, failed("list webhook endpoints", err)
	}
	out := make([]endpointstore.Endpoint, 0, len(docs))
	for _, doc := range docs {
		ep, err := endpointstore.Unmarshal(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, ep)
	}
	return out, nil
}

// GetEndpoint implements endpointstore.Store.
func (e *Endpoints) GetEndpoint(ctx context.Context, id string) (endpointstore.Endpoint, error) {
	var doc []byte
	err := e.store.pool.QueryRow(ctx, pgGetEndpointSQL, id).Scan(&doc)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return endpointstore.Endpoint{}, endpointstore.ErrNotFound
	case err != nil:
		return endpointstore.Endpoint{}, failed("get a webhook endpoint", err)
	}
	return endpointstore.Unmarshal(doc)
}

// PutEndpoint implements endpointstore.Store.
func (e *Endpoints) PutEndpoint(ctx context.Context, ep endpointstore.Endpoint, expect int64) (endpointstore.Endpoint, error) {
	ep.Revision = expect + 1
	doc, err := endpointstore.Marshal(ep)
	if err != nil {
		return endpointstore.Endpoint{}, err
	}
	err = e.write(ctx, "write a webhook endpoint", func(tx pgx.Tx) error {
		if expect == 0 {
			tag, err := tx.Exec(ctx, pgInsertEndpoint, ep.ID, ep.Revision, doc)
			if err == nil && tag.RowsAffected() == 0 {
				return endpointstore.ErrRevision
			}
			return err
		}
		rev, err := revision(ctx, tx, ep.ID)
		if err != nil {
			return err
		}
		if rev != expect {
			return endpointstore.ErrRevision
		}
		_, err = tx.Exec(ctx, pgUpdateEndpoint, ep.ID, ep.Revision, doc)
		return err
	})
	if err != nil {
		return endpointstore.Endpoint{}, err
	}
	return endpointstore.Unmarshal(doc)
}

// DeleteEndpoint implements endpointstore.Store.
func (e *Endpoints) DeleteEndpoint(ctx context.Context, id string, expect int64) error {
	return e.write(ctx, "delete a webhook endpoint", func(tx pgx.Tx) error {
		rev, err := revision(ctx, tx, id)
		switch {
		case err != nil:
			return err
		case rev == 0:
			return endpointstore.ErrNotFound
		case expect != 0 && rev != expect:
			return endpointstore.ErrRevision
		}
		_, err = tx.Exec(ctx, pgDeleteEndpoint, id)
		return err
	})
}

// EndpointsVersion implements endpointstore.Store.
func (e *Endpoints) EndpointsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := e.store.pool.QueryRow(ctx, pgEndpointsVersion).Scan(&v); err != nil {
		return 0, failed("read the webhook endpoints' version", err)
	}
	return v, nil
}

// write runs fn and raises the version in one transaction; an answer of
// fn (ErrNotFound, ErrRevision) is returned as is, a failure marked as
// the store's.
func (e *Endpoints) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, e.store.pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, pgBumpEndpoints)
		return err
	})
	if err == nil || errors.Is(err, endpointstore.ErrNotFound) || errors.Is(err, endpointstore.ErrRevision) {
		return err
	}
	return failed(op, err)
}

// revision reads and locks the revision of the endpoint id: 0 when none.
func revision(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
	var rev int64
	err := tx.QueryRow(ctx, pgRevisionSQL, id).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return rev, err
}
