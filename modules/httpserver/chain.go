package httpserver

import (
	"net/http"

	"go.uber.org/fx"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// MiddlewaresParams are the API chain's links that other modules own.
type MiddlewaresParams struct {
	fx.In

	Tracing   httpapi.Middleware `name:"tracing"`
	Metrics   httpapi.Middleware `name:"metrics"`
	AccessLog httpapi.Middleware `name:"access_log"`
	Auth      httpapi.Middleware `name:"auth"`
	RateLimit httpapi.Middleware `name:"rate_limit"`
	// Scope holds the matched route's requirement (httpapi.Route.Requires,
	// httpapi.RequiredScope) against the caller's principal.
	Scope httpapi.Middleware `name:"scope"`
}

// NewAPIHandler assembles the API listener's chain, outermost first:
//   - route resolution, which only matches, so that everything below knows
//     the route template, and bounds the wait for bodies that no link reads
//     (unread.go);
//   - security headers, set first so that every answer carries them;
//   - tracing, metrics and access log, so that every answer, refusals and
//     panics included, is traced, counted and logged;
//   - the refusal of a request whose framing is ambiguous (framing.go),
//     first after the telemetry links, so that it is logged and counted,
//     and before auth, since its connection is closed whoever sent it;
//   - recover, inside the telemetry links so that its 500 is counted and
//     logged like any answer and its log line has the trace id (net/http
//     itself recovers a panic above it, by dropping the connection);
//   - auth, before anything of the request is read;
//   - the per-caller rate limit, which needs auth's principal;
//   - the route's scope requirement (httpapi.Route.Requires, checked by
//     auth's "scope" link), which needs the principal too; after the rate
//     limit, so that refused requests count against the caller's rate like
//     any other;
//   - reading the body of a route that takes one (readahead.go), so that
//     a slow body does not hold a slot of the cap while it arrives;
//   - the concurrency cap. It sits after auth on purpose: a flood of
//     requests with bad tokens, each a cheap 401, must not fill the slots and
//     starve valid clients; only authenticated requests with their body in
//     hand, which do the expensive work (decoding, store), compete for them;
//   - the matched handler.
//
// A public route (httpapi.Route.Public: the console's static files) goes
// through the same chain without the links that are about a caller (auth,
// rate limit, scope, read-ahead, concurrency cap): it takes no body and
// its answer holds no data.
func NewAPIHandler(router *Router, m MiddlewaresParams, rec *Recoverer, shed *Shedder) http.Handler {
	h := router.Dispatch()
	h = shed.Wrap(h)
	h = readAhead(h)
	h = m.Scope(h)
	h = m.RateLimit(h)
	h = m.Auth(h)
	h = rec.Wrap(h)
	h = RefuseAmbiguousFraming(h)
	h = m.AccessLog(h)
	h = m.Metrics(h)
	h = m.Tracing(h)
	h = SecurityHeaders(h)
	return router.ResolveWithPublic(h, publicChain(router, m, rec))
}

// publicChain is NewAPIHandler's chain for public routes, in the same
// order without the links that need a caller.
func publicChain(router *Router, m MiddlewaresParams, rec *Recoverer) http.Handler {
	h := router.Dispatch()
	h = rec.Wrap(h)
	h = RefuseAmbiguousFraming(h)
	h = m.AccessLog(h)
	h = m.Metrics(h)
	h = m.Tracing(h)
	return SecurityHeaders(h)
}
