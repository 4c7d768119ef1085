package plants

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/plants/entitytag"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Conditional requests (RFC 9110 §13). A plant's ETag is strong (see ETag),
// If-Match compares strongly and If-None-Match weakly, as §13.1.1 and
// §13.1.2 require; "*" matches any stored plant. One evaluation
// (preconditions.evaluate) serves GET, HEAD, PUT and DELETE, in HTTP's
// order: If-Match first, then If-None-Match. If-Unmodified-Since and
// If-Modified-Since are not evaluated: a plant has no Last-Modified, and
// without one a server ignores them.

// preconditions are a request's If-Match and If-None-Match.
type preconditions struct {
	ifMatch, ifNoneMatch       entityTags
	hasIfMatch, hasIfNoneMatch bool
}

// parsePreconditions reads both headers; a malformed one is a 400 on every
// method, decided before the store is asked anything.
func parsePreconditions(r *http.Request) (pc preconditions, err error) {
	if pc.ifMatch, pc.hasIfMatch, err = parseEntityTags(r, "If-Match"); err != nil {
		return pc, err
	}
	pc.ifNoneMatch, pc.hasIfNoneMatch, err = parseEntityTags(r, "If-None-Match")
	return pc, err
}

// openPlant reads what every /plants/{id} method starts with: the path's id
// and the request's preconditions. When either is bad it answers 400
// itself and ok is false.
func openPlant(w http.ResponseWriter, r *http.Request) (id int64, pc preconditions, ok bool) {
	id, err := pathID(r)
	if err == nil {
		pc, err = parsePreconditions(r)
	}
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return 0, preconditions{}, false
	}
	return id, pc, true
}

// needsState reports whether evaluating pc needs the stored plant. "If-Match:
// *" alone asks only that a plant exist, which the write itself finds out
// (a missing plant fails it), so it is evaluated by the write, atomically;
// comparing with a plant read first would fail it spuriously when another
// write changes the plant in between (the chaos run found that).
func (pc preconditions) needsState() bool {
	return pc.hasIfNoneMatch || (pc.hasIfMatch && !pc.ifMatch.Any)
}

// verdict is what the evaluation decided: status 0 to perform the method,
// else the status to answer instead (304 or 412) and a 412's message.
type verdict struct {
	status  int
	message string
}

// evaluate decides pc against current, the stored plant (nil when none is
// stored under id). safe is true for GET and HEAD, whose failed
// If-None-Match is a 304 rather than a 412.
func (pc preconditions) evaluate(id int64, current *plant.Plant, safe bool) verdict {
	if !pc.hasIfMatch && !pc.hasIfNoneMatch {
		return verdict{} // the common case costs nothing
	}
	plantID := "plant " + strconv.FormatInt(id, 10)
	var etag string
	if current != nil {
		etag = ETag(*current)
	}
	if pc.hasIfMatch {
		if current == nil {
			return verdict{http.StatusPreconditionFailed, plantID + " not found; If-Match requires it to exist"}
		}
		if !pc.ifMatch.MatchStrong(etag) {
			return verdict{http.StatusPreconditionFailed, plantID + " has changed: If-Match does not match its current ETag"}
		}
	}
	if pc.hasIfNoneMatch && current != nil && pc.ifNoneMatch.MatchWeak(etag) {
		if safe {
			return verdict{status: http.StatusNotModified}
		}
		if pc.ifNoneMatch.Any {
			return verdict{http.StatusPreconditionFailed, plantID + " exists; If-None-Match: * requires that it not"}
		}
		return verdict{http.StatusPreconditionFailed, plantID + " has not changed: If-None-Match lists its current ETag"}
	}
	return verdict{}
}

// answer writes a verdict that stops the method; the plant's ETag goes with
// it when one is stored, so the client learns the state that decided.
func (v verdict) answer(w http.ResponseWriter, current *plant.Plant) {
	if current != nil {
		w.Header().Set("ETag", ETag(*current))
	}
	if v.status == http.StatusNotModified {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	httperr.Write(w, v.status, v.message)
}

// maxConditionalAttempts bounds how often a conditional write evaluates
// again after losing its race with another write of the same plant. Each
// lost race means another write succeeded, so the service as a whole
// progresses; the bound keeps one request from chasing a plant that
// changes faster than it can read it. Such a request is answered 503 with
// Retry-After, not 412: its preconditions held every time they were
// evaluated, and it wrote nothing.
const maxConditionalAttempts = 8

// writeIf performs a PUT's or DELETE's write under pc. The preconditions
// are evaluated against the plant as read, and write is given that plant
// as its match: the store writes only while the plant is still the one
// read (a compare-and-swap), so the state the preconditions were decided
// on is the state the write applies to. When the plant changed in between,
// the write fails and the evaluation runs again on the new state. write's
// match is nil for an unconditional write. ok is false once it answered.
func (h *Handlers) writeIf(w http.ResponseWriter, r *http.Request, id int64, pc preconditions, write func(match *plant.Plant) error) (ok bool) {
	if !pc.needsState() {
		err := write(nil)
		if err == nil {
			return true
		}
		if pc.hasIfMatch && errors.Is(err, plant.ErrNotFound) { // "*" needs a plant
			pc.evaluate(id, nil, false).answer(w, nil)
			return false
		}
		h.storeError(w, r, err, id)
		return false
	}
	for range maxConditionalAttempts {
		stored, err := h.store.Get(r.Context(), id)
		var current *plant.Plant
		switch {
		case err == nil:
			current = &stored
		case !errors.Is(err, plant.ErrNotFound):
			h.storeError(w, r, err, id)
			return false
		}
		if v := pc.evaluate(id, current, false); v.status != 0 {
			v.answer(w, current)
			return false
		}
		if current == nil { // the preconditions hold; the method finds no plant
			h.storeError(w, r, plant.ErrNotFound, id)
			return false
		}
		err = write(current)
		if err == nil {
			return true
		}
		if !errors.Is(err, plant.ErrPreconditionFailed) && !errors.Is(err, plant.ErrNotFound) {
			h.storeError(w, r, err, id)
			return false
		}
		// Changed or removed since the read: decide again on what is stored now.
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	httperr.Write(w, http.StatusServiceUnavailable, "plant "+strconv.FormatInt(id, 10)+" kept changing while the request's preconditions were evaluated; retry later")
	return false
}

// entityTags is a parsed If-Match or If-None-Match header.
type entityTags = entitytag.List

// parseEntityTags reads the named header's field lines as one list. ok is
// false when the header is absent; a value that is not "*" or a list of
// entity tags is an error whose message names the header, answered 400.
func parseEntityTags(r *http.Request, name string) (et entityTags, present bool, err error) {
	lines := r.Header.Values(name)
	if len(lines) == 0 {
		return et, false, nil
	}
	value := strings.Join(lines, ",")
	et, ok := entitytag.Parse(value)
	if !ok {
		return et, true, badRequest(name + " must be " + entitytag.Expected + ", not " + quoteClipped(strings.TrimSpace(value)))
	}
	return et, true, nil
}

// quoteClipped quotes a header value for an error message, clipped.
func quoteClipped(s string) string { return strconv.Quote(clip(s)) }
