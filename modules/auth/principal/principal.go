// Package principal is who a request acts for: the identity an
// authenticator (a static token, a verified JWT) establishes, and the
// scopes it holds. It depends on the standard library only, so that any
// module (the scope check, the access log, the rate limit, a handler) can
// ask who the caller is without knowing how it was authenticated.
package principal

import (
	"context"
	"slices"
	"strings"
)

// Scopes name what a principal may do. A route declares the one it requires
// (httpserver.Route.Requires).
const (
	ScopePlantsRead  = "plants:read"  // GET, HEAD and list
	ScopePlantsWrite = "plants:write" // POST, PUT and DELETE
	// ScopeWebhooksManage: the webhook endpoints under /webhooks/endpoints
	// (reading them included: a listing shows where events go), their record
	// of attempts, the messages and their redelivery.
	ScopeWebhooksManage = "webhooks:manage"
)

// Scopes are every scope an operation may require: the names a tokens
// file or a scope mapping may grant. A new one is added here and to the
// README's "Scopes" paragraph.
var Scopes = []string{ScopePlantsRead, ScopePlantsWrite, ScopeWebhooksManage}

// Principal is an authenticated caller. Authenticators build one per
// credential when they load it (a token file line, a verified JWT) and hand
// out the same pointer on every request, so that attaching the caller to a
// request costs no allocation. A Principal is never changed once handed out.
type Principal struct {
	// ID is unique across authenticators and stable for a credential: it
	// keys per-caller state such as the rate limit. It is prefixed by the
	// authenticator's kind ("token:", "jwt:") so that two kinds
	// cannot collide.
	ID string
	// Name is for people: the access log's "caller" field, spans. Never a
	// credential, nor anything a credential can be recovered from.
	Name string
	// Scopes are what the principal may do, unless AllScopes.
	Scopes []string
	// AllScopes grants every scope, today's and future ones: a static token
	// listed without scopes keeps the meaning it had before scopes existed.
	AllScopes bool
}

// Has reports whether p holds scope. A nil principal (no caller) holds none.
func (p *Principal) Has(scope string) bool {
	return p != nil && (p.AllScopes || slices.Contains(p.Scopes, scope))
}

// Key is the context key under which a context carries a request's
// principal. It is exported so that a context of its own (the router's
// per-request record, to which auth attaches the principal with
// httpapi.Attach) can answer it, at no cost per request.
type Key struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, Key{}, p)
}

// FromContext returns the principal ctx carries, or nil when the request
// was not authenticated (or not yet: a link outside auth sees it, through
// the router's record, once the request is served).
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(Key{}).(*Principal)
	return p
}

// ScopeTokens splits a scope string as OAuth 2.0 writes it: tokens
// separated by the space character (U+0020) only, empty tokens skipped. A
// tab or a no-break space is part of a token, so that
// "plants:read\u00a0plants:write" is one scope, unknown, rather than two:
// a token issuer that wrote it meant something else, and a reading that
// grants more than was issued is the one to avoid.
func ScopeTokens(s string) []string {
	var out []string
	for tok := range strings.SplitSeq(s, " ") {
		if tok != "" {
			out = append(out, tok)
		}
	}
	return out
}

// ConfigFields splits a line of the operator's configuration (a tokens-file
// line, a --jwt-subject-scopes entry) into fields separated by spaces and
// tabs, the whitespace an editor shows as such. Any other character,
// Unicode spaces included, belongs to a field, so a no-break space pasted
// between two scopes makes one unknown scope, refused, not two granted.
func ConfigFields(line string) []string {
	return strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
}
