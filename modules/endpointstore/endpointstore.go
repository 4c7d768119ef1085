// Package endpointstore is the contract between the plant stores and the
// webhooks module for the endpoints made through the API: a store keeps
// them beside its plants (bolt in the plants file, PostgreSQL in the plants
// database, memory for development), so that they survive restarts and
// every replica on one database sends to the same set. Each store
// implements Store; the suite in endpointstoretest holds every one of them
// to the same semantics. The package knows no store and no sender: the
// webhooks module validates what it stores and decides what it means.
package endpointstore

import (
	"context"
	"errors"
	"time"
)

// Endpoint is one endpoint as the API made it. A store keeps it as given
// (its JSON, see Marshal) and gives it back unchanged but for Revision.
type Endpoint struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	Format      string   `json:"format"`
	Events      []string `json:"events,omitempty"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason says why the sender disabled it (a 410, a failure
	// lasting too long); "" while enabled, or when its owner disabled it.
	DisabledReason string `json:"disabled_reason,omitempty"`
	// Secrets sign every request; the first is the newest. One whose
	// NotAfter has passed signs nothing, and the next write drops it.
	Secrets []Secret `json:"secrets"`
	// Revision counts the endpoint's writes, from 1 at its creation: its
	// ETag, and what a write that read it first expects (Put).
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Secret is a signing secret, "whsec_" and the base64 of its key, kept in
// the store as is: signing needs the key itself. It prints redacted, so
// that no log or error shows it by accident.
type Secret struct {
	Value string `json:"value"`
	// NotAfter ends a rotated secret's overlap; zero for a secret with no
	// end.
	NotAfter time.Time `json:"not_after,omitzero"`
}

// String hides the value.
func (Secret) String() string { return "whsec_[redacted]" }

// GoString hides the value from %#v too.
func (s Secret) GoString() string { return s.String() }

// Active reports whether s signs at now.
func (s Secret) Active(now time.Time) bool { return s.NotAfter.IsZero() || now.Before(s.NotAfter) }

// Errors of a store's answers, the same on every store.
var (
	// ErrNotFound: no endpoint has the id.
	ErrNotFound = errors.New("endpointstore: no such endpoint")
	// ErrRevision: the endpoint's stored revision is not the one the
	// write expected (another write came first; or, for a create, the id
	// is taken).
	ErrRevision = errors.New("endpointstore: the endpoint changed since it was read")
)

// Store keeps the API's endpoints.
type Store interface {
	// ListEndpoints lists at most limit endpoints whose id sorts after
	// after ("" for the first), in ascending id order.
	ListEndpoints(ctx context.Context, after string, limit int) ([]Endpoint, error)
	// GetEndpoint returns the endpoint id, or ErrNotFound.
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	// PutEndpoint stores ep when the stored revision of ep.ID is expect
	// (0: none is stored, a create), with the revision expect+1, and
	// returns it as stored; ErrRevision otherwise, writing nothing.
	PutEndpoint(ctx context.Context, ep Endpoint, expect int64) (Endpoint, error)
	// DeleteEndpoint removes the endpoint id when its stored revision is
	// expect (0: whatever it is): ErrNotFound when there is none,
	// ErrRevision when it has another revision.
	DeleteEndpoint(ctx context.Context, id string, expect int64) error
	// EndpointsVersion changes whenever an endpoint is written or
	// removed, by any replica; a reader that saw it unchanged has every
	// endpoint as it was (the webhooks' sender polls it).
	EndpointsVersion(ctx context.Context) (int64, error)
}

// Provider is a store that keeps endpoints: the plants module provides
// its store's Store through it.
type Provider interface {
	Endpoints() Store
}
