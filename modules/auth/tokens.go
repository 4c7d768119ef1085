// Package auth checks bearer tokens on the API listener. Tokens come from a
// file that is watched and reloaded on change, so tokens rotate with no
// restart, and from a static list for development.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// tokenSet is the set of accepted tokens; it is swapped whole on reload.
// tokenSet are kept as SHA-256 digests and compared in constant time, so
// neither a token's content nor its length leaks through timing. Each
// token's Principal is built when the token is loaded, so that a request
// gets a pointer to it and allocates nothing.
type tokenSet struct {
	static  []tokenEntry
	current atomic.Pointer[[]tokenEntry]
}

// tokenEntry is one accepted token: its digest and who it stands for.
type tokenEntry struct {
	digest    [sha256.Size]byte
	principal *principal.Principal
}

// errUnknownToken is every refusal of Authenticate: a token that is not in
// the set. Static, so that a refusal allocates nothing.
var errUnknownToken = errors.New("the token is not in the tokens file or --tokens")

// newTokenSet returns a set holding the static tokens (from --tokens).
func newTokenSet(static []string) *tokenSet {
	t := &tokenSet{static: entries(static)}
	t.Replace(nil)
	return t
}

// Replace sets the reloadable tokens (from the tokens file); the static ones
// stay.
func (t *tokenSet) Replace(fromFile []tokenLine) {
	all := append(lineEntries(fromFile), t.static...)
	t.current.Store(&all)
}

// Len is the number of accepted tokens.
func (t *tokenSet) Len() int { return len(*t.current.Load()) }

// Valid reports whether token is accepted. It compares against every token,
// never stopping early.
func (t *tokenSet) Valid(token string) bool {
	return t.principalOf(sha256.Sum256([]byte(token))) != nil
}

// Authenticate implements Authenticator: the token's principal, or
// errUnknownToken.
func (t *tokenSet) Authenticate(_ context.Context, token string) (*principal.Principal, error) {
	if p := t.principalOf(sha256.Sum256([]byte(token))); p != nil {
		return p, nil
	}
	return nil, errUnknownToken
}

// principalOf returns the principal of the token with digest d, or nil. It
// compares against every token, never stopping early, and picks the match
// without a branch on it.
func (t *tokenSet) principalOf(d [sha256.Size]byte) *principal.Principal {
	entries := *t.current.Load()
	match := -1
	for i := range entries {
		eq := subtle.ConstantTimeCompare(d[:], entries[i].digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return nil
	}
	return entries[match].principal
}

// TokenName is the name, and the id, of the static token with digest d:
// "token:" and the hex of the digest's first 8 bytes. It is derived from
// the digest rather than from the token's line in the file so that it stays
// the same when lines are added, removed or reordered, and when the token
// moves between --tokens and the file; it reveals nothing of a token of
// enough entropy. A line of the file may name its token (name=), which
// then is the principal's Name; the ID stays this.
func TokenName(d [sha256.Size]byte) string {
	return "token:" + hex.EncodeToString(d[:8])
}

// entries builds each token's entry from --tokens: a token listed there
// has every scope, as before scopes existed.
func entries(tokens []string) []tokenEntry {
	lines := make([]tokenLine, 0, len(tokens))
	for _, tok := range tokens {
		lines = append(lines, tokenLine{Token: tok})
	}
	return lineEntries(lines)
}

// lineEntries builds each line's entry: its principal is named by the
// line's name= when it has one, by the token's digest otherwise, and holds
// the line's scopes, or every scope when it lists none.
func lineEntries(lines []tokenLine) []tokenEntry {
	out := make([]tokenEntry, 0, len(lines))
	for _, l := range lines {
		d := sha256.Sum256([]byte(l.Token))
		id := TokenName(d)
		name := id
		if l.Name != "" {
			name = l.Name
		}
		p := &principal.Principal{ID: id, Name: name, Scopes: l.Scopes, AllScopes: len(l.Scopes) == 0}
		out = append(out, tokenEntry{digest: d, principal: p})
	}
	return out
}

// splitList splits a comma-separated token list (the --tokens flag).
func splitList(list string) []string {
	var out []string
	for _, tok := range strings.Split(list, ",") {
		if tok = strings.TrimSpace(tok); tok != "" {
			out = append(out, tok)
		}
	}
	return out
}
