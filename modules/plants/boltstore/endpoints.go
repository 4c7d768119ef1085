package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/endpointstore"
)

// The webhook endpoints made through the API, made by migration 5: each
// under its id, as endpointstore.Marshal writes it. endpointsVersionKey,
// in the meta bucket, counts their writes (8 bytes, big-endian).
var (
	endpointsBucket     = []byte("webhook_endpoints")
	endpointsVersionKey = []byte("webhook_endpoints_version")
)

// Endpoints is the store's endpointstore.Store, in its file. A write is a
// commit of the group committer, on disk when it returns.
type Endpoints struct{ store *Store }

// Endpoints returns the store's webhook endpoints.
func (s *Store) Endpoints() endpointstore.Store { return &Endpoints{store: s} }

// ListEndpoints implements endpointstore.Store.
func (e *Endpoints) ListEndpoints(ctx context.Context, after string, limit int) ([]endpointstore.Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []endpointstore.Endpoint
	err := e.store.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(endpointsBucket).Cursor()
		k, v := c.Seek([]byte(after))
		if k != nil && bytes.Equal(k, []byte(after)) {
			k, v = c.Next()
		}
		for ; k != nil && len(out) < limit; k, v = c.Next() {
			ep, err := endpointstore.Unmarshal(v)
			if err != nil {
				return err
			}
			out = append(out, ep)
		}
		return nil
	})
	return out, err
}

// GetEndpoint implements endpointstore.Store.
func (e *Endpoints) GetEndpoint(ctx context.Context, id string) (endpointstore.Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return endpointstore.Endpoint{}, err
	}
	var ep endpointstore.Endpoint
	err := e.store.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(endpointsBucket).Get([]byte(id))
		if v == nil {
			return endpointstore.ErrNotFound
		}
		var err error
		ep, err = endpointstore.Unmarshal(v)
		return err
	})
	return ep, err
}

// PutEndpoint implements endpointstore.Store.
func (e *Endpoints) PutEndpoint(ctx context.Context, ep endpointstore.Endpoint, expect int64) (endpointstore.Endpoint, error) {
	ep.Revision = expect + 1
	doc, err := endpointstore.Marshal(ep)
	if err != nil {
		return endpointstore.Endpoint{}, err
	}
	err = e.store.Update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(endpointsBucket)
		rev, err := storedRevision(b, ep.ID)
		if err != nil {
			return err
		}
		if rev != expect {
			return endpointstore.ErrRevision
		}
		if err := b.Put([]byte(ep.ID), doc); err != nil {
			return err
		}
		return bumpEndpointsVersion(tx)
	})
	if err != nil {
		return endpointstore.Endpoint{}, err
	}
	return endpointstore.Unmarshal(doc)
}

// DeleteEndpoint implements endpointstore.Store.
func (e *Endpoints) DeleteEndpoint(ctx context.Context, id string, expect int64) error {
	return e.store.Update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(endpointsBucket)
		rev, err := storedRevision(b, id)
		switch {
		case err != nil:
			return err
		case rev == 0:
			return endpointstore.ErrNotFound
		case expect != 0 && rev != expect:
			return endpointstore.ErrRevision
		}
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
		return bumpEndpointsVersion(tx)
	})
}

// EndpointsVersion implements endpointstore.Store.
func (e *Endpoints) EndpointsVersion(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var v int64
	err := e.store.db.View(func(tx *bolt.Tx) error {
		v = endpointsVersion(tx)
		return nil
	})
	return v, err
}

// storedRevision is the revision of the endpoint id in b, 0 when none.
func storedRevision(b *bolt.Bucket, id string) (int64, error) {
	v := b.Get([]byte(id))
	if v == nil {
		return 0, nil
	}
	ep, err := endpointstore.Unmarshal(v)
	return ep.Revision, err
}

func endpointsVersion(tx *bolt.Tx) int64 {
	v := tx.Bucket(metaBucket).Get(endpointsVersionKey)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v)) //nolint:gosec // G115: a count this file wrote
}

func bumpEndpointsVersion(tx *bolt.Tx) error {
	return tx.Bucket(metaBucket).Put(endpointsVersionKey, binary.BigEndian.AppendUint64(nil, uint64(endpointsVersion(tx)+1))) //nolint:gosec // G115: a count, never negative
}
