package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// create handles POST /plants: it answers the Plant (name, and tag when the
// request had one), never the id, as the contract's rule 2 requires.
func (h *Handlers) create(w http.ResponseWriter, r *http.Request) {
	body, buf, ok := h.readJSON(w, r)
	if !ok {
		return
	}
	defer putBuffer(buf)
	p, err := decodeNewPlant(body)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	res, err := h.store.Create(r.Context(), p)
	if err != nil {
		h.storeError(w, r, err, p.ID)
		return
	}
	if res == plant.Created { // an identical retry answers the same, but created nothing
		h.created.Inc()
	}
	buf.Reset()
	// The answer holds the body's name and tag, so it is about the body's
	// size: room made once stays with the pooled buffer (when the chain
	// read the body ahead, into a buffer of its own, buf has none yet).
	buf.Grow(len(body))
	writeJSON(w, http.StatusOK, appendPlant(buf.Bytes(), p))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	httperr.SetJSONContentType(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
