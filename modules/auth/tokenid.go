package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

type tokenIDKey struct{}

// TokenID identifies the token an authenticated request carried: the hex
// of the first 8 bytes of its SHA-256 digest. It is stable for a token,
// distinct between tokens in practice, and reveals nothing of the token, so
// it may key per-client limits and appear in logs and metrics where the
// token itself never may. It is "" for a request that did not pass the auth
// middleware.
func TokenID(ctx context.Context) string {
	id, _ := ctx.Value(tokenIDKey{}).(string)
	return id
}

func withTokenID(r *http.Request, digest [sha256.Size]byte) *http.Request {
	id := hex.EncodeToString(digest[:8])
	return r.WithContext(context.WithValue(r.Context(), tokenIDKey{}, id))
}
