package auth

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// RequireScope is the chain's "scope" link: it holds the matched route's
// requirement (httpapi.Route.Requires, which the router records:
// httpapi.RequiredScope) against the caller's principal, which Wrap
// attached above it. The http module places it after the rate limit, so
// that refused requests count against the caller's rate like any other.
//
// A caller without the scope gets 403 with the RFC 6750 §3.1 challenge
// naming the scope, counted as reasonInsufficientScope; its connection
// stays open, unlike a 401's: its token is valid, and other operations may
// be allowed to it. A route that requires a scope, reached with no
// principal at all (a chain without auth), is refused too: the check fails
// closed.
func (m *authMiddleware) RequireScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scope := httpapi.RequiredScope(r.Context())
		if scope == "" || principal.FromContext(r.Context()).Has(scope) {
			next.ServeHTTP(w, r)
			return
		}
		m.failures.WithLabelValues(reasonInsufficientScope).Inc()
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`"`)
		httperr.Write(w, http.StatusForbidden, "this token lacks the scope "+scope+" that the operation requires")
	})
}
