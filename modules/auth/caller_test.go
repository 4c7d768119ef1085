package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// TestEveryAuthenticatedRequestHasACaller: with no rate limit, as with
// one, the handler finds the caller's principal; before, the token's id
// reached the request only when a rate limit was set.
func TestEveryAuthenticatedRequestHasACaller(t *testing.T) {
	m, err := newAuthMiddleware(newTokenSet([]string{"alice-token", "bob-token"}), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var seen []*principal.Principal
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, principal.FromContext(r.Context()))
	}))
	for _, tok := range []string{"alice-token", "alice-token", "bob-token"} {
		r := httptest.NewRequest(http.MethodGet, "/plants", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if len(seen) != 3 {
		t.Fatalf("the handler ran %d times, want 3", len(seen))
	}
	alice, bob := seen[0], seen[2]
	sum := sha256.Sum256([]byte("alice-token"))
	want := "token:" + hex.EncodeToString(sum[:8])
	if alice == nil || alice.ID != want || alice.Name != want || !alice.AllScopes {
		t.Fatalf("alice's principal = %+v, want ID and Name %q and every scope", alice, want)
	}
	if !alice.Has(principal.ScopePlantsRead) || !alice.Has(principal.ScopePlantsWrite) {
		t.Fatalf("a token listed without scopes lacks one: %+v", alice)
	}
	if seen[1] != alice {
		t.Fatal("the same token gave a different principal pointer: one was built per request")
	}
	if bob == nil || bob.ID == alice.ID || len(bob.ID) != len("token:")+16 {
		t.Fatalf("bob's principal = %+v, alice's %+v: want distinct ids of 16 hex digits", bob, alice)
	}
	for _, p := range seen {
		if strings.Contains(p.ID+p.Name, "alice") || strings.Contains(p.ID+p.Name, "bob") {
			t.Fatalf("principal %+v shows its token", p)
		}
	}
}

// TestCallerNameSurvivesAReload: a name derived from the token, not from
// its line, so reordering the file or moving the token to --tokens keeps
// it; the principal is rebuilt at the reload, not per request.
func TestCallerNameSurvivesAReload(t *testing.T) {
	tokens := newTokenSet([]string{"static-token"})
	tokens.Replace(lines("a-token", "b-token"))
	before, err := tokens.Authenticate(t.Context(), "b-token")
	if err != nil {
		t.Fatal(err)
	}
	tokens.Replace(lines("new-token", "b-token", "a-token"))
	after, err := tokens.Authenticate(t.Context(), "b-token")
	if err != nil {
		t.Fatal(err)
	}
	if before.ID != after.ID || before.Name != after.Name {
		t.Fatalf("b-token's principal changed with its line: %+v, then %+v", before, after)
	}
	moved := newTokenSet([]string{"b-token"})
	if p, _ := moved.Authenticate(t.Context(), "b-token"); p == nil || p.ID != before.ID {
		t.Fatalf("b-token from --tokens = %+v, want the id it has in the file, %q", p, before.ID)
	}
	if p, err := tokens.Authenticate(t.Context(), "c-token"); p != nil || err == nil {
		t.Fatalf("Authenticate(unknown) = %+v, %v; want nil and an error", p, err)
	}
}
