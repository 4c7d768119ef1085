package auth

import (
	"context"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// Authenticator turns a bearer token into the principal it stands for. The
// static tokens (Tokens) are one; a JWT verifier will be another, and the
// middleware will ask each in turn. An error means the token is not
// accepted (the middleware answers 401 invalid_token); it is never the
// token, nor does it contain it.
//
// Authenticate runs on every API request: it should hand out a Principal
// built ahead of time (at load, or cached per credential) rather than
// allocate one.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*principal.Principal, error)
}

var _ Authenticator = (*Tokens)(nil)
