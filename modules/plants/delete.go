package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// delete handles DELETE /plants/{id}: 204 with no body once the plant is
// gone, 404 when none was stored under the id. A repeated delete therefore
// answers 404; the plant is gone either way, and the client learns that its
// earlier request (or someone else's) removed it.
func (h *Handlers) delete(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := h.store.Delete(r.Context(), id); err != nil {
		h.storeError(w, r, err, id)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
