package httpserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/http/httperr"
)

// UnmatchedRoute is the route label of requests that match no route, so
// that metrics and spans never carry a raw, client-chosen path.
const UnmatchedRoute = "unmatched"

// Router resolves each request to its route once, at the top of the chain,
// so that every middleware (tracing, metrics, logs, auth) knows the route
// template before the handler runs, and dispatches to the handler at the
// bottom of the chain.
type Router struct {
	mux      *mux.Router
	requires map[*mux.Route]string // the routes with a Route.Requires
}

// NewRouter builds a router over routes, serving HEAD wherever a route
// serves GET. Unknown paths answer 404 and known paths with another method
// 405 with Allow, both as JSON Error bodies. A path matched by several
// routes goes to the one with the fewest variables ("/plants/changes"
// before "/plants/{id}"), whatever order the routes come in: modules
// contribute them through a value group, which keeps no order.
func NewRouter(routes []Route) *Router {
	m := mux.NewRouter()
	requires := make(map[*mux.Route]string)
	routes = slices.Clone(routes)
	slices.SortStableFunc(routes, func(a, b Route) int {
		return strings.Count(a.Path, "{") - strings.Count(b.Path, "{")
	})
	for _, rt := range routes {
		if route := handle(m, rt); rt.Requires != "" {
			requires[route] = rt.Requires
		}
	}
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httperr.Write(w, http.StatusNotFound, "no such path: "+r.URL.Path)
	})
	return &Router{mux: m, requires: requires}
}

// handle registers rt on m, serving HEAD wherever GET is served, as HTTP
// requires (RFC 9110 9.1). The handler sees a HEAD as the GET it stands
// for, so that handlers which check the method answer it too; net/http,
// which knows the request is a HEAD, sends only the headers.
func handle(m *mux.Router, rt Route) *mux.Route {
	if rt.Method != http.MethodGet {
		return m.Handle(rt.Path, rt.Handler).Methods(rt.Method)
	}
	get := rt.Handler
	return m.Handle(rt.Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			asGet := *r
			asGet.Method = http.MethodGet
			r = &asGet
		}
		get.ServeHTTP(w, r)
	})).Methods(http.MethodGet, http.MethodHead)
}

type resolvedKey struct{}

// resolved is the router's record of one request. Links below Resolve keep
// their per-request state in it (the answer tracker, the body watch, the
// caller's principal) rather than in context values of their own: each
// context value costs a copy of the request.
//
// It is itself the request's context, the server's with two values of its
// own: itself, and the principal's slot. One allocation carries both, and
// principal.FromContext finds the slot like any context value.
type resolved struct {
	context.Context
	template  string
	handler   http.Handler
	vars      map[string]string
	requires  string // the matched route's Route.Requires
	tracker   AnswerTracker
	body      eofReader
	principal principal.Slot
}

// Value implements context.Context.
func (res *resolved) Value(key any) any {
	switch key.(type) {
	case resolvedKey:
		return res
	case principal.Key:
		return &res.principal
	}
	return res.Context.Value(key)
}

// Resolve matches the request against the routes and records the result in
// its context; Dispatch later runs the matched handler.
func (rt *Router) Resolve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m mux.RouteMatch
		rt.mux.Match(r, &m)
		res := &resolved{Context: r.Context(), template: UnmatchedRoute, handler: m.Handler, vars: m.Vars}
		switch {
		case errors.Is(m.MatchErr, mux.ErrMethodMismatch):
			template, allow := rt.allowed(r)
			res.template = template
			res.handler = methodNotAllowed(allow)
		case m.Route != nil && m.MatchErr == nil:
			res.template, _ = m.Route.GetPathTemplate()
			res.requires = rt.requires[m.Route]
		}
		r = r.WithContext(res)
		watched := watchBody(r, &res.body)
		next.ServeHTTP(w, r)
		if watched {
			boundUnreadBody(w, &res.body)
		}
	})
}

// Dispatch is the innermost handler: it runs what Resolve matched.
func (rt *Router) Dispatch() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := r.Context().Value(resolvedKey{}).(*resolved)
		if !ok { // used without Resolve: fall back to matching here
			rt.mux.ServeHTTP(w, r)
			return
		}
		if len(res.vars) > 0 { // mux hands out an empty map for routes without variables
			r = mux.SetURLVars(r, res.vars)
		}
		res.handler.ServeHTTP(w, r)
	})
}

// RouteTemplate returns the route template Resolve found for the request,
// or UnmatchedRoute.
func RouteTemplate(ctx context.Context) string {
	if res, ok := ctx.Value(resolvedKey{}).(*resolved); ok {
		return res.template
	}
	return UnmatchedRoute
}

// allowed lists the methods served on the request's path, and the path's
// template. It walks every route, which is fine on this rare path.
func (rt *Router) allowed(r *http.Request) (template string, methods []string) {
	template = UnmatchedRoute
	_ = rt.mux.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		routeMethods, _ := route.GetMethods() // nil for a route without methods: nothing to probe
		for _, method := range routeMethods {
			probe := r.Clone(r.Context())
			probe.Method = method
			var m mux.RouteMatch
			if route.Match(probe, &m) && m.MatchErr == nil {
				methods = append(methods, method)
				template, _ = route.GetPathTemplate()
			}
		}
		return nil
	})
	slices.Sort(methods)
	return template, slices.Compact(methods)
}

func methodNotAllowed(allow []string) http.Handler {
	list := strings.Join(allow, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", list)
		httperr.Write(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed here; allowed: "+list)
	})
}
