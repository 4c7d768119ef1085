package httpapi

import (
	"context"
	"net/http"

	"go.uber.org/fx"
)

// Route is one operation a module serves. Modules contribute routes to the
// API listener through the "api_routes" value group (see AsAPIRoutes) and to
// the admin listener through "admin_routes".
type Route struct {
	Method  string // e.g. http.MethodPost
	Path    string // a gorilla/mux template, e.g. "/plants/{id}"
	Handler http.Handler
	// Requires is the scope the caller's principal must hold (a
	// principal.Scope* constant); "" requires none. The router records it
	// (RequiredScope) and the auth module's "scope" link checks it, after
	// auth and the rate limit. A static token listed without scopes holds
	// every scope.
	Requires string
	// Public serves the route without credentials: its requests skip auth,
	// the rate limit, the scope check and the concurrency cap (all of which
	// are about a caller), and keep the telemetry links. Only for a GET
	// whose answer holds no data, such as the console's static files;
	// Requires must then be "".
	Public bool
	// Headers are set on every answer of the route before any link runs,
	// so that the chain's own refusals (401, 403, 429) carry them too: the
	// console's Content-Security-Policy. The router shares them between
	// answers; no link may change them.
	Headers http.Header
}

// AsAPIRoutes annotates a constructor returning []Route so that its routes
// join the API listener.
func AsAPIRoutes(f any) any {
	return fx.Annotate(f, fx.ResultTags(`group:"api_routes,flatten"`))
}

// AsAdminRoutes annotates a constructor returning []Route so that its routes
// join the admin listener.
func AsAdminRoutes(f any) any {
	return fx.Annotate(f, fx.ResultTags(`group:"admin_routes,flatten"`))
}

// Middleware wraps a handler. The API chain's middlewares arrive as named
// values ("tracing", "metrics", "access_log", "auth", "rate_limit",
// "scope") because Fx value groups do not keep order, and the order is the
// http module's decision (its NewAPIHandler).
type Middleware func(http.Handler) http.Handler

// ReadinessCheck is asked by /readyz; modules contribute theirs through the
// "readiness" value group (the store's ping, for one).
type ReadinessCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// AsReadinessCheck annotates a constructor returning a ReadinessCheck.
func AsReadinessCheck(f any) any {
	return fx.Annotate(f, fx.ResultTags(`group:"readiness"`))
}
