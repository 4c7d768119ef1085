package auth

import (
	"context"
	"errors"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// Authenticator turns a bearer token into the principal it stands for. The
// static tokens (tokenSet) are one, the JWT verifier (jwtauth.Verifier)
// another; the middleware asks each in turn (authenticators). An error
// means the token is not accepted (the middleware answers 401
// invalid_token); it is never the token, nor does it contain it. An error
// with a FailureReason() string method names the metric's reason.
//
// Authenticate runs on every API request: it should hand out a Principal
// built ahead of time (at load, or cached per credential) rather than
// allocate one.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*principal.Principal, error)
}

var _ Authenticator = (*tokenSet)(nil)

// authenticators ask each authenticator in turn; the first that accepts the
// token answers. A refusal is the most telling of the refusals: one that
// names its reason (an expired JWT) over the plain "not ours" of the
// others, so that the metric says why a JWT failed even though the static
// tokens were asked first.
type authenticators []Authenticator

// Authenticate implements Authenticator.
func (as authenticators) Authenticate(ctx context.Context, token string) (*principal.Principal, error) {
	var refusal error
	for _, a := range as {
		p, err := a.Authenticate(ctx, token)
		if err == nil && p != nil {
			return p, nil
		}
		if refusal == nil || reasonOf(err) != reasonInvalid {
			refusal = err
		}
	}
	if refusal == nil {
		refusal = errUnknownToken
	}
	return nil, refusal
}

// reasonOf is the metric's reason for a refusal: the error's own, or
// reasonInvalid.
func reasonOf(err error) string {
	var r interface{ FailureReason() string }
	if errors.As(err, &r) {
		return r.FailureReason()
	}
	return reasonInvalid
}
