// Package httpserver owns the two listeners: the API,
// where every request needs a bearer token, and the cluster-internal admin
// listener with probes, metrics, version and the OpenAPI document. It builds
// the routers, orders the middleware chain, writes JSON errors for unknown
// paths and methods, and starts and drains both servers with Fx's lifecycle.
package httpserver

import "time"

// Config is the listeners' part of the program's configuration.
type Config struct {
	Addr            string        // API listener, e.g. ":8080"
	AdminAddr       string        // admin listener, e.g. ":9090"
	DrainDelay      time.Duration // how long the API keeps serving after readiness turns 503
	ShutdownTimeout time.Duration // how long in-flight requests get once the drain ends

	Limits Limits // what one client may take of the server; see limits.go
	Pprof  bool   // serve /debug/pprof/ on the admin listener
}
