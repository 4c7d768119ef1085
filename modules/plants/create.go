package plants

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// create handles POST /plants: it answers the Plant (name, and tag when the
// request had one), never the id, as the contract's rule 2 requires.
func (h *Handlers) create(w http.ResponseWriter, r *http.Request) {
	if !checkJSONContentType(w, r) {
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	if !readBody(w, r, buf, h.maxBodyBytes) {
		return
	}
	p, err := DecodeNewPlant(buf.Bytes())
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := h.store.Create(r.Context(), p); err != nil {
		h.storeError(w, r, err, p.ID)
		return
	}
	h.created.Inc()
	buf.Reset()
	writeJSON(w, http.StatusOK, appendPlant(buf.Bytes(), p))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	httperr.SetJSONContentType(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
