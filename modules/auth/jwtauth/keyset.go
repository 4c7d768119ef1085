package jwtauth

import (
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"go.uber.org/zap"
)

// verifyKey is one public key, exported from its JWK when the set is
// fetched so that a verification does not convert it again.
type verifyKey struct {
	raw any    // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
	alg string // the JWK's "alg", "" when it has none
}

// keySet is the keys in use, by kid; replaced whole on every fetch.
type keySet struct {
	byKID map[string]verifyKey
	only  *verifyKey // the one key, for a token without kid; nil unless exactly one
}

// newKeySet keeps the set's signature keys; a key for encryption, or one
// that cannot be exported (a private or unknown key type), is skipped.
func newKeySet(set jwk.Set, log *zap.Logger) *keySet {
	ks := &keySet{byKID: make(map[string]verifyKey, set.Len())}
	var last verifyKey
	for i := range set.Len() {
		key, _ := set.Key(i)
		if use, ok := key.KeyUsage(); ok && use != "sig" {
			continue
		}
		var raw any
		if err := jwk.Export(key, &raw); err != nil {
			log.Warn("JWKS key skipped", zap.Error(err))
			continue
		}
		vk := verifyKey{raw: raw}
		if alg, ok := key.Algorithm(); ok {
			vk.alg = alg.String()
		}
		kid, _ := key.KeyID()
		ks.byKID[kid] = vk
		last = vk
	}
	if len(ks.byKID) == 1 {
		ks.only = &last
	}
	return ks
}

func (ks *keySet) len() int { return len(ks.byKID) }

func (ks *keySet) lookup(kid string) (verifyKey, bool) {
	if kid == "" && ks.only != nil {
		return *ks.only, true
	}
	k, ok := ks.byKID[kid]
	return k, ok
}

// allowed are the signature algorithms accepted: asymmetric only, so that
// a token signed with HMAC using the public key as its secret (the
// algorithm-confusion attack) or with "none" never verifies.
var allowed = map[string]jwa.SignatureAlgorithm{
	"RS256": jwa.RS256(),
	"ES256": jwa.ES256(),
	"EdDSA": jwa.EdDSA(),
}
