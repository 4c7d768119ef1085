package plant

import (
	"context"
	"errors"
)

// Store keeps plants. Implementations are safe for concurrent use and honour
// the context's deadline. A Create that returns a nil error means the plant
// is stored as durably as the backend promises (on disk for bolt, committed
// for postgres).
type Store interface {
	// Create stores p and says what it did: Created when this call stored
	// it, Unchanged when an identical plant was stored already (a retried
	// create is not an error, and writes nothing). A different plant under
	// the same id fails with ErrConflict. Among concurrent identical
	// creates of one new id, exactly one is Created.
	Create(ctx context.Context, p Plant) (CreateResult, error)
	// Get returns the plant stored under id, or ErrNotFound.
	Get(ctx context.Context, id int64) (Plant, error)
	// List returns at most q.Limit plants in ascending id order, starting
	// after q.After when it is set and keeping only q.Tag when it is set.
	// It seeks by key, so a page deep in the list costs what the first does.
	List(ctx context.Context, q ListQuery) ([]Plant, error)
	// Delete removes the plant stored under id, or fails with ErrNotFound.
	Delete(ctx context.Context, id int64) error
	// Replace replaces the name and tag of the plant stored under p.ID (a
	// tag left nil is removed), or fails with ErrNotFound. With a match,
	// it is a compare-and-swap: it writes only while the stored plant
	// equals *match, and otherwise fails with ErrPreconditionFailed, so of
	// concurrent updates made against one state exactly one succeeds.
	Replace(ctx context.Context, p Plant, match *Plant) error
	// DeleteMatching removes the plant stored under match.ID only while it
	// equals match: ErrPreconditionFailed when it differs, ErrNotFound
	// when none is stored.
	DeleteMatching(ctx context.Context, match Plant) error
	// Ping reports whether the store can serve requests; readiness uses it.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// ListQuery selects a page of plants.
type ListQuery struct {
	After *int64  // only ids greater than this; nil starts at the smallest id
	Tag   *string // only plants with exactly this tag; nil for all
	Limit int     // at most this many; must be positive
}

var (
	// ErrConflict means the id is already stored with a different name or
	// tag. It is an answer (see AnswerOf).
	ErrConflict error = &answer{name: "conflict", text: "plant: id already stored with different content"}
	// ErrNotFound means no plant is stored under the id. It is an answer.
	ErrNotFound error = &answer{name: "not_found", text: "plant: not found"}
	// ErrPreconditionFailed means a conditional write found the plant
	// changed since the caller read it (its If-Match is stale). It is an
	// answer.
	ErrPreconditionFailed error = &answer{name: "precondition_failed", text: "plant: stored plant does not match the precondition"}
	// ErrUnavailable wraps failures where the backend cannot be reached; the
	// request may succeed if retried later.
	ErrUnavailable = errors.New("plant: store unavailable")
)

// BatchCreator is a Store that creates many plants in one commit: the bulk
// import's lines go to it in batches, rather than one Create each, where
// the store has it.
type BatchCreator interface {
	// CreateBatch creates ps, whose ids are distinct, as many Creates
	// would, and returns one result per plant in ps's order: each
	// plant's outcome is what its Create would have said, and a
	// conflict carries the plant stored. The batch's creates commit
	// together, each with its change and events, or none does: an error
	// says none was made or, for an unavailable store, that it is
	// unknown whether they were (an identical retry settles it), and no
	// result is given then. A plant the store had to create alone
	// afterwards (its id was freed between the batch's insert and its
	// read) has its own outcome, a failure included.
	CreateBatch(ctx context.Context, ps []Plant) ([]BatchResult, error)
}

// BatchResult is one plant's outcome in a CreateBatch.
type BatchResult struct {
	// Result is Created or Unchanged when Err is nil.
	Result CreateResult
	// Err is ErrConflict when a different plant is stored under the id
	// (Stored), or the failure of this plant alone.
	Err error
	// Stored is the plant stored under the id, on a conflict.
	Stored Plant
}
