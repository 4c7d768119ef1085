package auth

import (
	"crypto/sha256"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// Reasons a request is refused, the values of the auth_failures metric's
// "reason" label.
const (
	ReasonMissing = "missing" // no Authorization header
	ReasonScheme  = "scheme"  // not the Bearer scheme
	ReasonEmpty   = "empty"   // Bearer with no token
	ReasonInvalid = "invalid" // a token that is not accepted
	// ReasonDuplicate is more than one Authorization header. Which one
	// counts is not settled (we read the first, a proxy in front may read
	// the last), so neither does: whatever their order or validity.
	ReasonDuplicate = "duplicate"
)

// Reasons are every reason, in the order the metric's series are documented.
var Reasons = []string{ReasonMissing, ReasonScheme, ReasonEmpty, ReasonInvalid, ReasonDuplicate}

// Middleware refuses requests without a valid bearer token with 401, before
// anything of the request body is read. A 401 closes the connection: a
// client without a token has nothing more to send on it, and an idle
// connection kept open for it would hold one of the server's file
// descriptors (and --max-connections) for --idle-timeout.
type Middleware struct {
	tokens   *Tokens
	failures *prometheus.CounterVec
	// attachTokenID puts the TokenID in each authenticated request's
	// context. Only the rate limiter reads it, and a context value costs a
	// copy of the request, so the module turns it off when no limit is set.
	attachTokenID bool
}

// NewMiddleware returns the auth check over tokens; failures are counted on
// reg as plantstore_auth_failures_total{reason}.
func NewMiddleware(tokens *Tokens, reg prometheus.Registerer) (*Middleware, error) {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_auth_failures_total",
		Help: "API requests refused for missing or invalid bearer credentials, by reason.",
	}, []string{"reason"})
	for _, reason := range Reasons {
		failures.WithLabelValues(reason) // export every series from the start, at zero
	}
	if err := reg.Register(failures); err != nil {
		return nil, err
	}
	return &Middleware{tokens: tokens, failures: failures, attachTokenID: true}, nil
}

// Wrap is the middleware.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header["Authorization"]) > 1 { // the canonical key: no copy, unlike Header.Values
			m.refuse(w, ReasonDuplicate)
			return
		}
		digest, reason := m.check(r.Header.Get("Authorization"))
		if reason != "" {
			m.refuse(w, reason)
			return
		}
		if m.attachTokenID {
			r = withTokenID(r, digest)
		}
		next.ServeHTTP(w, r)
	})
}

// check returns the digest of a valid credential's token, or the reason it
// is refused.
func (m *Middleware) check(header string) (digest [sha256.Size]byte, reason string) {
	if header == "" {
		return digest, ReasonMissing
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return digest, ReasonScheme
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return digest, ReasonEmpty
	}
	digest = sha256.Sum256([]byte(token))
	if !m.tokens.validDigest(digest) {
		return digest, ReasonInvalid
	}
	return digest, ""
}

func (m *Middleware) refuse(w http.ResponseWriter, reason string) {
	m.failures.WithLabelValues(reason).Inc()
	challenge := `Bearer realm="plantstore"`
	message := "a bearer token is required: send Authorization: Bearer <token>"
	switch reason {
	case ReasonScheme:
		message = "the Authorization header must use the Bearer scheme"
	case ReasonInvalid:
		challenge += `, error="invalid_token"`
		message = "the bearer token is not valid"
	case ReasonDuplicate:
		message = "send one Authorization header, not several"
	}
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Connection", "close")
	httperr.Write(w, http.StatusUnauthorized, message)
}
