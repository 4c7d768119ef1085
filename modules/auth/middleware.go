package auth

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/modules/auth/jwtauth"
	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// Reasons a request is refused, the values of the auth_failures metric's
// "reason" label.
const (
	reasonMissing = "missing" // no Authorization header
	reasonScheme  = "scheme"  // not the Bearer scheme
	reasonEmpty   = "empty"   // Bearer with no token
	reasonInvalid = "invalid" // a token that is not accepted
	// reasonDuplicate is more than one Authorization header. Which one
	// counts is not settled (we read the first, a proxy in front may read
	// the last), so neither does: whatever their order or validity.
	reasonDuplicate = "duplicate"
	// reasonInsufficientScope is a valid credential without the scope the
	// operation requires: 403, counted here so that one metric tells every
	// refusal of a caller.
	reasonInsufficientScope = "insufficient_scope"
)

// reasons are every reason, in the order the metric's series are
// documented: the header's, a JWT's (jwtauth.Reasons), the scope's.
var reasons = slices.Concat(
	[]string{reasonMissing, reasonScheme, reasonEmpty, reasonInvalid, reasonDuplicate},
	jwtauth.Reasons,
	[]string{reasonInsufficientScope},
)

// authMiddleware refuses requests without a valid bearer token with 401, before
// anything of the request body is read. A 401 closes the connection: a
// client without a token has nothing more to send on it, and an idle
// connection kept open for it would hold one of the server's file
// descriptors (and --max-connections) for --idle-timeout.
//
// A request it lets through carries its caller's principal.Principal
// (principal.FromContext), always: the rate limit keys on it, the route's
// scope check (RequireScope) reads it, the access log names it.
type authMiddleware struct {
	authn    Authenticator
	failures *prometheus.CounterVec
}

// newAuthMiddleware returns the auth check over authn (authenticators: the
// static tokenSet, and the JWT verifier when JWTs are on);
// failures are counted on reg as plantstore_auth_failures_total{reason}.
func newAuthMiddleware(authn Authenticator, reg prometheus.Registerer) (*authMiddleware, error) {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_auth_failures_total",
		Help: "API requests refused for missing, invalid or insufficient bearer credentials, by reason.",
	}, []string{"reason"})
	for _, reason := range reasons {
		failures.WithLabelValues(reason) // export every series from the start, at zero
	}
	if err := reg.Register(failures); err != nil {
		return nil, err
	}
	return &authMiddleware{authn: authn, failures: failures}, nil
}

// Wrap is the middleware.
func (m *authMiddleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header["Authorization"]) > 1 { // the canonical key: no copy, unlike Header.Values
			m.refuse(w, reasonDuplicate)
			return
		}
		p, reason := m.check(r.Context(), r.Header.Get("Authorization"))
		if reason != "" {
			m.refuse(w, reason)
			return
		}
		// Behind the router, the principal is attached to its per-request
		// record, at no cost and visible to the links outside this one;
		// elsewhere it goes into a new context.
		if !httpapi.Attach(r.Context(), principal.Key{}, p) {
			r = r.WithContext(principal.WithPrincipal(r.Context(), p))
		}
		// The span names the caller as the access log does: by the
		// principal's Name, never by its credential.
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			span.SetAttributes(attribute.String(callerAttribute, p.Name))
		}
		next.ServeHTTP(w, r)
	})
}

// check returns the principal of a valid credential, or the reason it is
// refused.
func (m *authMiddleware) check(ctx context.Context, header string) (p *principal.Principal, reason string) {
	if header == "" {
		return nil, reasonMissing
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return nil, reasonScheme
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, reasonEmpty
	}
	p, err := m.authn.Authenticate(ctx, token)
	if err != nil || p == nil {
		return nil, reasonOf(err)
	}
	return p, ""
}

// callerAttribute is the span attribute naming the caller (OpenTelemetry's
// enduser.id): the principal's Name.
const callerAttribute = "enduser.id"

func (m *authMiddleware) refuse(w http.ResponseWriter, reason string) {
	m.failures.WithLabelValues(reason).Inc()
	challenge := `Bearer realm="plantstore"`
	message := "a bearer token is required: send Authorization: Bearer <token>"
	switch reason {
	case reasonScheme:
		message = "the Authorization header must use the Bearer scheme"
	case reasonMissing, reasonEmpty:
	case reasonDuplicate:
		message = "send one Authorization header, not several"
	case jwtauth.ReasonExpired:
		challenge += `, error="invalid_token"`
		message = "the bearer token has expired"
	default: // reasonInvalid and the JWT's: a token was sent and refused
		challenge += `, error="invalid_token"`
		message = "the bearer token is not valid"
	}
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Connection", "close")
	httperr.Write(w, http.StatusUnauthorized, message)
}
