package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
)

func TestTokenIDIsAShortDigestNeverTheToken(t *testing.T) {
	h, _ := limitedChain(t, 0, 0, "alice-token", "bob-token")
	alice := call(h, "alice-token").Body.String()
	sum := sha256.Sum256([]byte("alice-token"))
	if want := hex.EncodeToString(sum[:8]); alice != want {
		t.Fatalf("TokenID = %q, want %q (hex of the first 8 bytes of SHA-256)", alice, want)
	}
	if strings.Contains(alice, "alice") {
		t.Fatalf("TokenID %q shows the token", alice)
	}
	if again := call(h, "alice-token").Body.String(); again != alice {
		t.Fatalf("TokenID changed between requests: %q, %q", alice, again)
	}
	if bob := call(h, "bob-token").Body.String(); bob == alice || len(bob) != 16 {
		t.Fatalf("bob's TokenID = %q, alice's %q: want distinct 16-character ids", bob, alice)
	}
	if w := call(h, "bad-token"); w.Code != http.StatusUnauthorized {
		t.Fatalf("bad token = %d", w.Code)
	}
}

func TestTokenIDWithoutAuthIsEmpty(t *testing.T) {
	if id := TokenID(context.Background()); id != "" {
		t.Fatalf("TokenID of a bare context = %q", id)
	}
}
