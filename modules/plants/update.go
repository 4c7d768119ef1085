package plants

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/plantstore/plantstore/modules/http/httperr"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// update handles PUT /plants/{id}: it replaces the plant's name and tag (a
// tag left out is removed) and answers the Plant shape, like the create,
// with the new ETag. PUT never creates: 404 when no plant has the id. With
// If-Match, the write happens only while the plant still has one of the
// listed ETags (412 otherwise, and on a missing plant); the store compares
// and writes atomically, so of two PUTs made with one ETag one wins.
func (h *Handlers) update(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	if !checkBodyHeaders(w, r) {
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	body, ok := readBody(w, r, buf, h.maxBodyBytes)
	if !ok {
		return
	}
	p, err := DecodeReplacement(body, id)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	ifMatch, conditional, err := parseEntityTags(r, "If-Match")
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	// "*" asks only that a plant exist (RFC 9110 §13.1.1): the write is
	// unconditional, and a missing plant answers 412 below. Comparing with
	// the plant read first would fail it spuriously when another write
	// changes the plant in between (the chaos run found that).
	var match *plant.Plant
	if conditional && !ifMatch.any {
		current, ok := h.currentMatching(w, r, id, ifMatch)
		if !ok {
			return
		}
		match = &current
	}
	if err := h.store.Replace(r.Context(), p, match); err != nil {
		h.conditionalStoreError(w, r, err, id, conditional)
		return
	}
	w.Header().Set("ETag", ETag(p))
	buf.Reset()
	writeJSON(w, http.StatusOK, appendPlant(buf.Bytes(), p))
}

// currentMatching reads the plant a conditional write is about and checks
// it against If-Match; when it answers (412, or a store failure) ok is
// false. The store then writes only while the plant is still the one read
// here, which closes the gap between this read and the write.
func (h *Handlers) currentMatching(w http.ResponseWriter, r *http.Request, id int64, ifMatch entityTags) (plant.Plant, bool) {
	current, err := h.store.Get(r.Context(), id)
	if err != nil {
		h.conditionalStoreError(w, r, err, id, true)
		return plant.Plant{}, false
	}
	if !ifMatch.matchStrong(ETag(current)) {
		w.Header().Set("ETag", ETag(current))
		preconditionFailed(w, id)
		return plant.Plant{}, false
	}
	return current, true
}

// conditionalStoreError answers a failed write. Under If-Match a missing
// plant fails the precondition (RFC 9110 §13.1.1: "*" and every tag need a
// current representation), so it is a 412, not a 404.
func (h *Handlers) conditionalStoreError(w http.ResponseWriter, r *http.Request, err error, id int64, conditional bool) {
	if conditional && errors.Is(err, plant.ErrNotFound) {
		httperr.Write(w, http.StatusPreconditionFailed, "plant "+strconv.FormatInt(id, 10)+" not found; If-Match requires it to exist")
		return
	}
	h.storeError(w, r, err, id)
}

func preconditionFailed(w http.ResponseWriter, id int64) {
	status, message, _ := answerStatus(plant.ErrPreconditionFailed, id)
	httperr.Write(w, status, message)
}
