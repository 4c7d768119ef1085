package httpserver

import (
	"fmt"
	"net/http"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// PprofRoutes are Go's profiles under /debug/pprof/ for the admin listener,
// when cfg enables them (--pprof), in the format `go tool pprof` reads:
//
//	go tool pprof http://admin:9090/debug/pprof/profile?seconds=30
//	go tool pprof http://admin:9090/debug/pprof/heap
//
// They are off by default: a CPU profile costs the service while it runs,
// and the admin listener has no auth. They are served from runtime/pprof
// directly rather than through net/http/pprof, whose HTML index page links
// html/template into the binary: 0.4 MB of a 25 MB image budget.
func PprofRoutes(cfg Config) []httpapi.Route {
	if !cfg.Pprof {
		return nil
	}
	routes := []httpapi.Route{{Method: http.MethodGet, Path: "/debug/pprof/profile", Handler: cpuProfile{withDefaults(cfg.Limits).WriteTimeout}}}
	for _, p := range pprof.Profiles() { // allocs, block, goroutine, heap, mutex, threadcreate
		routes = append(routes, httpapi.Route{Method: http.MethodGet, Path: "/debug/pprof/" + p.Name(), Handler: namedProfile(p)})
	}
	return routes
}

// namedProfile writes p; ?debug=1 or 2 asks for text instead of protobuf.
func namedProfile(p *pprof.Profile) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		debug, _ := strconv.Atoi(r.URL.Query().Get("debug"))
		if debug > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		_ = p.WriteTo(w, debug)
	})
}

// profileWriteMargin is the time a CPU profile gets, past its duration, to
// be written out.
const profileWriteMargin = 10 * time.Second

// cpuProfile profiles the CPU for ?seconds= (default 30, at most 300).
// Profiles can outlast the admin server's write timeout (40s by default),
// which would cut the answer off and leave the client an empty reply, so
// it moves its connection's write deadline past the profile.
type cpuProfile struct{ writeTimeout time.Duration }

func (p cpuProfile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seconds, err := strconv.Atoi(r.URL.Query().Get("seconds"))
	if err != nil || seconds <= 0 {
		seconds = 30
	}
	seconds = min(seconds, 300)
	d := time.Duration(seconds) * time.Second
	err = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + profileWriteMargin))
	if err != nil && d+profileWriteMargin > p.writeTimeout { // a writer that cannot move it: refuse rather than send nothing
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "seconds=%d: the admin write timeout (%v) allows at most %d here\n",
			seconds, p.writeTimeout, max(0, int((p.writeTimeout-profileWriteMargin)/time.Second)))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := pprof.StartCPUProfile(w); err != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "cannot profile now: %v\n", err) // another profile is running
		return
	}
	select {
	case <-time.After(d):
	case <-r.Context().Done():
	}
	pprof.StopCPUProfile()
}
