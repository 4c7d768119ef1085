// Package httpapi is the floor every module stands on to serve HTTP: the
// Route a module contributes and the Fx annotations that collect routes and
// readiness checks, the Middleware shape, what the router records about a
// request (its route template, its required scope, its answer tracker, a
// value attached by a link of the chain), the body a route reads ahead of
// the handler, and the listeners' limits.
//
// It imports no module of the service, so that any module can import it
// without importing the http module (modules/httpserver), which builds the
// listeners and imports no module either.
package httpapi
