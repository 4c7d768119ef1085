package httpserver

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// Admin listener paths; the Kubernetes probes and Prometheus use them.
const (
	LivezPath   = "/livez"
	ReadyzPath  = "/readyz"
	VersionPath = "/version"
	OpenAPIPath = "/openapi.yaml"
)

// NewAdminHandler serves the admin listener: probes, version, the OpenAPI
// document, and the routes other modules contribute (metrics, log level).
// It has no auth: it must only be reachable inside the cluster.
func NewAdminHandler(ready *Readiness, routes []httpapi.Route) http.Handler {
	m := mux.NewRouter()
	m.HandleFunc(LivezPath, func(w http.ResponseWriter, _ *http.Request) {
		// Liveness never depends on the store: a database outage must not
		// get every replica restarted.
		writeJSON(w, http.StatusOK, []byte(`{"status":"alive"}`))
	}).Methods(http.MethodGet, http.MethodHead)
	m.Handle(ReadyzPath, ready).Methods(http.MethodGet, http.MethodHead)
	version, _ := json.Marshal(buildinfo.Get())
	m.HandleFunc(VersionPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, version)
	}).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc(OpenAPIPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(api.OpenAPI)
	}).Methods(http.MethodGet, http.MethodHead)
	for _, rt := range routes {
		handle(m, rt)
	}
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httperr.Write(w, http.StatusNotFound, "no such admin path: "+r.URL.Path)
	})
	// The same 405 as the API's, Allow included (RFC 9110 requires it).
	methods := &Router{mux: m}
	m.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, allow := methods.allowed(r)
		methodNotAllowed(allow).ServeHTTP(w, r)
	})
	return RefuseAmbiguousFraming(capAdminBody(m))
}

// AdminMaxBodyBytes caps the request body of every admin route. The
// largest body an admin handler needs is PUT /loglevel's {"level":"debug"};
// without a cap, a 200 MB body sent there was read whole into memory.
const AdminMaxBodyBytes = 4 << 10

// capAdminBody holds every admin request to AdminMaxBodyBytes: a body that
// declares more is refused with 413 before a byte of it is read, and one of
// unknown length (chunked) fails its handler's read at the cap, which the
// handler answers with httperr.WriteBodyTooLarge.
func capAdminBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > AdminMaxBodyBytes {
			// net/http would wait for up to 256 KiB of the unread body
			// before answering; a client that declared a body and sends
			// nothing would hold the connection until the read timeout.
			// The test recorders, without a connection, cannot move it.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(UnreadBodyGrace))
			httperr.WriteBodyTooLarge(w, AdminMaxBodyBytes)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, AdminMaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}
