package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// delete handles DELETE /plants/{id}: 204 with no body once the plant is
// gone, 404 when none was stored under the id. A repeated delete therefore
// answers 404; the plant is gone either way, and the client learns that its
// earlier request (or someone else's) removed it. With If-Match it deletes
// only the plant the client last saw (412 when it changed or is gone).
func (h *Handlers) delete(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	ifMatch, conditional, err := parseEntityTags(r, "If-Match")
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	if !conditional || ifMatch.any { // "*": any plant, see update
		err = h.store.Delete(r.Context(), id)
	} else if current, ok := h.currentMatching(w, r, id, ifMatch); ok {
		err = h.store.DeleteMatching(r.Context(), current)
	} else {
		return
	}
	if err != nil {
		h.conditionalStoreError(w, r, err, id, conditional)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
