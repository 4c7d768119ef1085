package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// get handles GET /plants/{id}: the stored plant as {id, name, tag?}, 404
// when none is stored under the id.
func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := h.store.Get(r.Context(), id)
	if err != nil {
		h.storeError(w, r, err, id)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	writeJSON(w, http.StatusOK, appendStoredPlant(buf.AvailableBuffer(), p))
}
