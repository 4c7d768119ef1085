package webhooks

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/plants/entitytag"
)

// Conditional requests on an endpoint, as on a plant (RFC 9110 §13):
// If-Match compares strongly, If-None-Match weakly, "*" matches any
// endpoint; If-Match is evaluated first. A failed If-None-Match is a 304
// on GET, a 412 on a write.

// preconditions are a request's If-Match and If-None-Match.
type preconditions struct {
	ifMatch, ifNoneMatch       entitytag.List
	hasIfMatch, hasIfNoneMatch bool
}

// parsePreconditions reads both headers; a malformed one is a 400.
func parsePreconditions(r *http.Request) (pc preconditions, err error) {
	if pc.ifMatch, pc.hasIfMatch, err = parseEntityTags(r, "If-Match"); err != nil {
		return pc, err
	}
	pc.ifNoneMatch, pc.hasIfNoneMatch, err = parseEntityTags(r, "If-None-Match")
	return pc, err
}

type badHeaderError struct{ message string }

func (e badHeaderError) Error() string { return e.message }

func parseEntityTags(r *http.Request, name string) (entitytag.List, bool, error) {
	lines := r.Header.Values(name)
	if len(lines) == 0 {
		return entitytag.List{}, false, nil
	}
	list, ok := entitytag.Parse(strings.Join(lines, ","))
	if !ok {
		return list, true, badHeaderError{name + " must be " + entitytag.Expected}
	}
	return list, true, nil
}

// verdict is what the evaluation decided: status 0 to go on, else the
// status to answer (304 or 412) and a 412's message.
type verdict struct {
	status  int
	message string
}

// evaluate decides pc against current (nil when there is no endpoint id);
// safe is true for GET.
func (pc preconditions) evaluate(id string, current *endpointJSON, safe bool) verdict {
	if !pc.hasIfMatch && !pc.hasIfNoneMatch {
		return verdict{}
	}
	name := "endpoint " + strconv.Quote(id)
	var etag string
	if current != nil {
		etag = current.etag()
	}
	if pc.hasIfMatch {
		if current == nil {
			return verdict{http.StatusPreconditionFailed, name + " not found; If-Match requires it to exist"}
		}
		if !pc.ifMatch.MatchStrong(etag) {
			return verdict{http.StatusPreconditionFailed, name + " has changed: If-Match does not match its current ETag"}
		}
	}
	if pc.hasIfNoneMatch && current != nil && pc.ifNoneMatch.MatchWeak(etag) {
		if safe {
			return verdict{status: http.StatusNotModified}
		}
		return verdict{http.StatusPreconditionFailed, name + " matches If-None-Match"}
	}
	return verdict{}
}

// answer writes a verdict that stops the operation, with the endpoint's
// ETag when there is one.
func (v verdict) answer(w http.ResponseWriter, current *endpointJSON) {
	if current != nil {
		w.Header().Set("ETag", current.etag())
	}
	if v.status == http.StatusNotModified {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	httperr.Write(w, v.status, v.message)
}
