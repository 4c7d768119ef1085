package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// get handles GET (and HEAD) /plants/{id}: the stored plant as {id, name,
// tag?} with its ETag, 404 when none is stored under the id. With
// If-None-Match naming the current ETag (or "*") it answers 304 without a
// body, so a client that polls a plant pays for it only when it changed.
func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	ifNoneMatch, conditional, err := parseEntityTags(r, "If-None-Match")
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := h.store.Get(r.Context(), id)
	if err != nil {
		h.storeError(w, r, err, id)
		return
	}
	etag := ETag(p)
	w.Header().Set("ETag", etag)
	if conditional && ifNoneMatch.matchWeak(etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	writeJSON(w, http.StatusOK, appendStoredPlant(buf.AvailableBuffer(), p))
}
