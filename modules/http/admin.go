package httpserver

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/modules/http/httperr"
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
func NewAdminHandler(ready *Readiness, routes []Route) http.Handler {
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
		handle(m, Route{Method: rt.Method, Path: rt.Path, Handler: jsonByDefault(rt.Handler)})
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
	return m
}

// jsonByDefault labels next's answers application/json unless next names
// another type: zap's AtomicLevel (/loglevel) writes JSON without a
// Content-Type, and net/http would sniff it as text/plain. Handlers that
// write something else (/metrics, pprof, http.Error) set their own type,
// which replaces this one.
func jsonByDefault(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httperr.SetJSONContentType(w.Header())
		next.ServeHTTP(w, r)
	})
}
