package httpserver

import (
	"net/http"
	"net/http/pprof"
)

// PprofRoutes are Go's profiling endpoints under /debug/pprof/, for the
// admin listener, when cfg enables them (--pprof). They are off by default:
// a CPU profile costs the service while it runs, and the admin listener has
// no auth.
func PprofRoutes(cfg Config) []Route {
	if !cfg.Pprof {
		return nil
	}
	get := func(path string, h http.HandlerFunc) Route {
		return Route{Method: http.MethodGet, Path: path, Handler: h}
	}
	routes := []Route{
		get("/debug/pprof/", pprof.Index),
		get("/debug/pprof/cmdline", pprof.Cmdline),
		get("/debug/pprof/profile", pprof.Profile),
		get("/debug/pprof/symbol", pprof.Symbol),
		get("/debug/pprof/trace", pprof.Trace),
	}
	for _, name := range []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"} {
		routes = append(routes, Route{Method: http.MethodGet, Path: "/debug/pprof/" + name, Handler: pprof.Handler(name)})
	}
	return routes
}
