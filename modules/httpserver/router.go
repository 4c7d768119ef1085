package httpserver

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// Router resolves each request to its route once, at the top of the chain,
// so that every middleware (tracing, metrics, logs, auth) knows the route
// template before the handler runs, and dispatches to the handler at the
// bottom of the chain.
type Router struct {
	mux *mux.Router
	// routes are what the chain needs of the routes with a
	// httpapi.Route.Requires, Public or Headers.
	routes map[*mux.Route]routeInfo
	// literals are the methods of each path without variables (HEAD with
	// GET): such a path is its routes' alone, so another method on it is a
	// 405, not a request for a template that also matches it.
	literals map[string][]string
}

// NewRouter builds a router over routes, serving HEAD wherever a route
// serves GET. Unknown paths answer 404 and known paths with another method
// 405 with Allow, both as JSON Error bodies. A path matched by several
// routes goes to the one with the fewest variables ("/plants/changes"
// before "/plants/{id}"), whatever order the routes come in: modules
// contribute them through a value group, which keeps no order.
func NewRouter(routes []httpapi.Route) *Router {
	m := mux.NewRouter()
	infos := make(map[*mux.Route]routeInfo)
	literals := make(map[string][]string)
	routes = slices.Clone(routes)
	slices.SortStableFunc(routes, func(a, b httpapi.Route) int {
		return strings.Count(a.Path, "{") - strings.Count(b.Path, "{")
	})
	for _, rt := range routes {
		if route := handle(m, rt); rt.Requires != "" || rt.Public || rt.Headers != nil {
			infos[route] = routeInfo{requires: rt.Requires, public: rt.Public, headers: rt.Headers}
		}
		if !strings.Contains(rt.Path, "{") {
			literals[rt.Path] = append(literals[rt.Path], rt.Method)
			if rt.Method == http.MethodGet {
				literals[rt.Path] = append(literals[rt.Path], http.MethodHead)
			}
		}
	}
	for path, methods := range literals {
		slices.Sort(methods)
		literals[path] = slices.Compact(methods)
	}
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httperr.Write(w, http.StatusNotFound, "no such path: "+r.URL.Path)
	})
	return &Router{mux: m, routes: infos, literals: literals}
}

// routeInfo is what the chain needs of a route besides its handler.
type routeInfo struct {
	requires string
	public   bool
	headers  http.Header
}

// handle registers rt on m, serving HEAD wherever GET is served, as HTTP
// requires (RFC 9110 9.1), through the GET handler (head.go): net/http,
// which knows the request is a HEAD, sends only the headers, and the
// answer ends with them.
func handle(m *mux.Router, rt httpapi.Route) *mux.Route {
	if rt.Method != http.MethodGet {
		return m.Handle(rt.Path, rt.Handler).Methods(rt.Method)
	}
	get := rt.Handler
	return m.Handle(rt.Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			serveHead(get, w, r)
			return
		}
		get.ServeHTTP(w, r)
	})).Methods(http.MethodGet, http.MethodHead)
}

type resolvedKey struct{}

// resolved is the router's record of one request: the record the modules
// read (httpapi.Record: the template, the required scope, the answer
// tracker, the principal auth attaches) and this module's own per-request
// state (the handler, the path's variables, the body watch). Links below
// Resolve keep their state in it rather than in context values of their
// own: each context value costs a copy of the request. It is itself the
// request's context: one allocation carries all of it.
type resolved struct {
	httpapi.Record
	handler http.Handler
	vars    map[string]string
	body    eofReader
	lasting bool // moved out of the concurrency cap's slots (Shedder.Last)
}

// Value implements context.Context.
func (res *resolved) Value(key any) any {
	if _, ok := key.(resolvedKey); ok {
		return res
	}
	return res.Record.Value(key)
}

// Resolve matches the request against the routes and records the result in
// its context; Dispatch later runs the matched handler.
func (rt *Router) Resolve(next http.Handler) http.Handler {
	return rt.ResolveWithPublic(next, next)
}

// ResolveWithPublic is Resolve sending the requests of httpapi.Route.Public
// routes to public, every other one to next: the two chains differ in the
// links that are about a caller, so the decision costs the authenticated
// requests nothing but the lookup Resolve makes anyway.
func (rt *Router) ResolveWithPublic(next, public http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m mux.RouteMatch
		rt.mux.Match(r, &m)
		res := &resolved{Record: httpapi.Record{Context: r.Context(), Template: httpapi.UnmatchedRoute}, handler: m.Handler, vars: m.Vars}
		chain := next
		switch {
		case errors.Is(m.MatchErr, mux.ErrMethodMismatch):
			template, allow := rt.allowed(r)
			res.Template = template
			res.handler = methodNotAllowed(allow)
		case m.Route != nil && m.MatchErr == nil:
			res.Template, _ = m.Route.GetPathTemplate()
			if allow, ok := rt.literals[r.URL.Path]; ok && res.Template != r.URL.Path {
				res.Template, res.handler, res.vars = r.URL.Path, methodNotAllowed(allow), nil
				break
			}
			info := rt.routes[m.Route]
			res.Requires = info.requires
			for k, v := range info.headers {
				w.Header()[k] = v
			}
			if info.public {
				chain = public
			}
		}
		r = r.WithContext(res)
		watched := watchBody(r, &res.body)
		chain.ServeHTTP(w, r)
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

// allowed lists the methods served on the request's path, and the path's
// template: a literal path's own, else those of every route that matches
// it, walking them all, which is fine on this rare path.
func (rt *Router) allowed(r *http.Request) (template string, methods []string) {
	if methods, ok := rt.literals[r.URL.Path]; ok {
		return r.URL.Path, methods
	}
	template = httpapi.UnmatchedRoute
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
