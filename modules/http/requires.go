package httpserver

import (
	"net/http"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/http/httperr"
)

// requireScope is the chain's link that holds the matched route's
// requirement (Route.Requires) against the caller's principal, which auth
// attached above it. A caller without the scope gets 403 with the RFC 6750
// §3.1 challenge naming the scope; its connection stays open, unlike a
// 401's: its token is valid, and other operations may be allowed to it. A
// route that requires a scope, reached with no principal at all (a chain
// without auth), is refused too: the check fails closed.
// Each refusal is told to refused (auth's failure counter), when set.
func requireScope(next http.Handler, refused ScopeRefused) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := r.Context().Value(resolvedKey{}).(*resolved)
		if !ok || res.requires == "" || principal.FromContext(r.Context()).Has(res.requires) {
			next.ServeHTTP(w, r)
			return
		}
		if refused != nil {
			refused(res.requires)
		}
		insufficientScope(w, res.requires)
	})
}

// ScopeRefused is told the scope of each request refused with 403 for
// lacking it; the auth module provides it (name "scope_refused") to count
// the refusal with its others.
type ScopeRefused func(scope string)

func insufficientScope(w http.ResponseWriter, scope string) {
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+scope+`"`)
	httperr.Write(w, http.StatusForbidden, "this token lacks the scope "+scope+" that the operation requires")
}
