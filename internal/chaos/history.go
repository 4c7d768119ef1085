package chaos

import (
	"slices"
	"sync"
	"time"
)

// Kind is the kind of an operation.
type Kind uint8

// The kinds of operation, one per request the workload sends.
const (
	Create Kind = iota // POST /plants
	Get                // GET /plants/{id}
	Delete             // DELETE /plants/{id}
	List               // GET /plants?tag=&after=&limit=, one page
	Update             // PUT /plants/{id}, with or without If-Match
)

func (k Kind) String() string {
	return [...]string{"create", "get", "delete", "list", "update"}[k]
}

// Answer is what an operation's answer says happened.
type Answer uint8

// The answers an operation can get.
const (
	// Unknown is a timeout, a reset, a 502/503/504. The operation may or
	// may not have taken effect, now or later.
	Unknown  Answer = iota
	OK              // 200 or 204
	Conflict        // 409: the id holds another plant
	NotFound        // 404
	// PreconditionFailed is a 412, an update whose If-Match named no
	// current representation (another ETag, or no plant at all).
	PreconditionFailed
	// Unexpected is a status the contract does not allow for the
	// operation (recorded so that the summary shows it; it fails the run).
	Unexpected
)

func (a Answer) String() string {
	return [...]string{"unknown", "ok", "conflict", "not-found", "precondition-failed", "unexpected"}[a]
}

// Plant is a plant as the workload sees it. Tag is never empty: the
// workload always sends one.
type Plant struct {
	ID   int64
	Name string
	Tag  string
}

// Op is one operation of the history.
type Op struct {
	Client int
	Kind   Kind
	ID     int64  // create, get, delete, update
	Name   string // create, update: the plant sent
	Tag    string // create, update; list: the tag filter

	// IfMatch is an update's If-Match: "" for none, "*", or an entity
	// tag. For an entity tag, Match is the content it names (the plant
	// of the get that answered it), or empty (Name "") for a tag that
	// names no plant.
	IfMatch string
	Match   Plant

	After    int64 // list: the cursor, ids above it
	HasAfter bool
	Limit    int // list: the page size asked for

	Answer  Answer
	Status  int    // the HTTP status, 0 when none came
	Err     string // the transport error, if any
	Replica string // the replica that answered (HAProxy's X-Replica), "" for HAProxy itself
	Got     Plant  // get: the plant answered
	ETag    string // get: the ETag answered
	Page    []Plant
	More    bool // list: a Link to a next page came

	Call, Return time.Duration // since the run's start; Return of an unknown is when the client gave up
}

// History is the record of a run's operations, safe for concurrent use.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewHistory starts the clock of a history.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time since the history's start (monotonic).
func (h *History) Now() time.Duration { return time.Since(h.start) }

// Wall is the clock's time at d since the history's start, to compare with
// times a store's clock gave (the same machine's).
func (h *History) Wall(d time.Duration) time.Time { return h.start.Add(d) }

// Add records a completed operation.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops is a copy of the operations recorded so far, in completion order.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}
