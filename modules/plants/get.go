package plants

import (
	"errors"
	"net/http"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// get handles GET (and HEAD) /plants/{id}: the stored plant as {id, name,
// tag?} with its ETag, 404 when none is stored under the id. Preconditions
// are evaluated as on every method (see preconditions.evaluate): with
// If-None-Match naming the current ETag (or "*") it answers 304 without a
// body, so a client that polls a plant pays for it only when it changed;
// an If-Match that does not hold is a 412.
func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	id, pc, ok := openPlant(w, r)
	if !ok {
		return
	}
	p, err := h.store.Get(r.Context(), id)
	if err != nil {
		if errors.Is(err, plant.ErrNotFound) {
			if v := pc.evaluate(id, nil, true); v.status != 0 {
				v.answer(w, nil)
				return
			}
		}
		h.storeError(w, r, err, id)
		return
	}
	if v := pc.evaluate(id, &p, true); v.status != 0 {
		v.answer(w, &p)
		return
	}
	w.Header().Set("ETag", ETag(p))
	buf := getBuffer()
	defer putBuffer(buf)
	writeJSON(w, http.StatusOK, appendStoredPlant(buf.AvailableBuffer(), p))
}
