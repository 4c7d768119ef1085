package jwtauth

// Reasons a JWT is refused: values of plantstore_auth_failures_total's
// "reason" label.
const (
	reasonMalformed    = "malformed"     // looks like a JWT but does not parse
	ReasonBadAlgorithm = "bad_algorithm" // not RS256, ES256 or EdDSA (none, HMAC included)
	ReasonUnknownKey   = "unknown_key"   // no key with its kid, even after a refresh
	ReasonBadSignature = "bad_signature"
	ReasonExpired      = "expired"
	ReasonNotYetValid  = "not_yet_valid" // nbf or iat in the future
	ReasonBadIssuer    = "bad_issuer"
	ReasonBadAudience  = "bad_audience"
	ReasonMissingClaim = "missing_claim" // no exp or no sub
)

// Reasons are every reason this package gives.
var Reasons = []string{reasonMalformed, ReasonBadAlgorithm, ReasonUnknownKey, ReasonBadSignature,
	ReasonExpired, ReasonNotYetValid, ReasonBadIssuer, ReasonBadAudience, ReasonMissingClaim}

// failure is a refused JWT: why, for the metric, and the error. Neither
// holds the token.
type failure struct {
	Reason string
	Err    error
}

func (f *failure) Error() string { return "JWT refused (" + f.Reason + "): " + f.Err.Error() }
func (f *failure) Unwrap() error { return f.Err }

// FailureReason is the reason the auth middleware counts.
func (f *failure) FailureReason() string { return f.Reason }

func fail(reason string, err error) *failure { return &failure{Reason: reason, Err: err} }
