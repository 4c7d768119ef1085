package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// delete handles DELETE /plants/{id}: 204 with no body once the plant is
// gone, 404 when none was stored under the id. A repeated delete therefore
// answers 404; the plant is gone either way, and the client learns that its
// earlier request (or someone else's) removed it. With If-Match it deletes
// only the plant the client last saw, with If-None-Match only one it has
// not seen (412 otherwise; see writeIf).
func (h *Handlers) delete(w http.ResponseWriter, r *http.Request) {
	id, pc, ok := openPlant(w, r)
	if !ok {
		return
	}
	deleted := h.writeIf(w, r, id, pc, func(match *plant.Plant) error {
		if match == nil {
			return h.store.Delete(r.Context(), id)
		}
		return h.store.DeleteMatching(r.Context(), *match)
	})
	if deleted {
		w.WriteHeader(http.StatusNoContent)
	}
}
