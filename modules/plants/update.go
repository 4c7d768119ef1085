package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// update handles PUT /plants/{id}: it replaces the plant's name and tag (a
// tag left out is removed) and answers the Plant shape, like the create,
// with the new ETag. PUT never creates: 404 when no plant has the id. With
// If-Match, the write happens only while the plant still has one of the
// listed ETags (412 otherwise, and on a missing plant); with If-None-Match
// only while it has none of them ("*": never, as PUT never creates). The
// store compares and writes atomically (see writeIf), so of two PUTs made
// with one ETag one wins.
func (h *Handlers) update(w http.ResponseWriter, r *http.Request) {
	id, pc, ok := openPlant(w, r)
	if !ok {
		return
	}
	body, buf, ok := h.readJSON(w, r)
	if !ok {
		return
	}
	defer putBuffer(buf)
	p, err := decodeReplacement(body, id)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	replaced := h.writeIf(w, r, id, pc, func(match *plant.Plant) error {
		return h.store.Replace(r.Context(), p, match)
	})
	if !replaced {
		return
	}
	w.Header().Set("ETag", ETag(p))
	buf.Reset()
	writeJSON(w, http.StatusOK, appendPlant(buf.Bytes(), p))
}
