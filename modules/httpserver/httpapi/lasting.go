package httpapi

import "net/http"

// Lasting answers. Most requests take milliseconds, and the http module's
// concurrency cap (--max-concurrent-requests) shares its slots among all
// of them. An answer that lasts as long as its client wants (a stream of
// changes, a long poll, a bulk import) would hold a slot for minutes, and
// one client opening enough of them would leave no slot for anyone. Such a
// handler therefore calls Last once it knows its answer will last: the
// request leaves the shared slots for a pool of its kind, capped in total
// and per caller, so that ordinary requests always find their slots.

// Lasting is a kind of lasting answer; each kind has its own pool.
type Lasting int

const (
	// Follow is a follower of the changes: a stream of events or a long
	// poll.
	Follow Lasting = iota
	// Import is a bulk import stream.
	Import
)

// String names the kind as metrics label it.
func (k Lasting) String() string {
	if k == Import {
		return "import"
	}
	return "follow"
}

// LastingLimiter keeps the pools of lasting answers; the http module's
// concurrency cap is one, and sets itself in the record of each request it
// admits.
type LastingLimiter interface {
	// Last moves the request out of the shared slots into kind's pool for
	// caller. Over the pool's caps it answers the refusal itself (429 over
	// the caller's share, 503 over the total) and returns false. end gives
	// the place back; the handler calls it when its answer is over.
	Last(w http.ResponseWriter, r *http.Request, kind Lasting, caller string) (end func(), ok bool)
}

// Last moves the request, whose answer will last, into kind's pool for
// caller (a principal's id); see LastingLimiter. Outside a chain with a
// limiter (a handler's unit test) it allows everything.
func Last(w http.ResponseWriter, r *http.Request, kind Lasting, caller string) (end func(), ok bool) {
	if rec := recordFrom(r.Context()); rec != nil && rec.Lasting != nil {
		return rec.Lasting.Last(w, r, kind, caller)
	}
	return func() {}, true
}
