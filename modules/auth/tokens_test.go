package auth

import (
	"crypto/sha256"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

func TestTokens(t *testing.T) {
	tokens := newTokenSet([]string{"static-1", "static-2"})
	if tokens.Len() != 2 {
		t.Fatalf("Len = %d, want 2", tokens.Len())
	}
	tokens.Replace(lines("file-1"))
	assertValid(t, tokens, map[string]bool{
		"static-1": true, "static-2": true, "file-1": true,
		"":          false,
		"static":    false, // a prefix
		"static-1x": false, // an extension
		"Static-1":  false, // case matters
		" static-1": false, //nolint:gocritic // the space is the point: no trimming here, the middleware trims the header
		"file-2":    false,
	})
	if tokens.Len() != 3 {
		t.Fatalf("Len = %d, want 3", tokens.Len())
	}

	// A reload replaces the file's tokens and keeps the static ones.
	tokens.Replace(lines("file-2", "file-3"))
	assertValid(t, tokens, map[string]bool{"static-1": true, "static-2": true, "file-1": false, "file-2": true, "file-3": true})
	tokens.Replace(nil)
	assertValid(t, tokens, map[string]bool{"static-1": true, "file-2": false})
	if tokens.Len() != 2 {
		t.Fatalf("Len = %d, want 2", tokens.Len())
	}
}

func TestTokensEmpty(t *testing.T) {
	tokens := newTokenSet(nil)
	if tokens.Len() != 0 {
		t.Fatalf("Len = %d, want 0", tokens.Len())
	}
	assertValid(t, tokens, map[string]bool{"": false, "anything": false})
}

func assertValid(t *testing.T, tokens *tokenSet, want map[string]bool) {
	t.Helper()
	for tok, ok := range want {
		if got := tokens.Valid(tok); got != ok {
			t.Errorf("Valid(%q) = %v, want %v", tok, got, ok)
		}
	}
}

// lines are tokens-file lines of the tokens, without names or scopes.
func lines(tokens ...string) []tokenLine {
	out := make([]tokenLine, 0, len(tokens))
	for _, tok := range tokens {
		out = append(out, tokenLine{Token: tok})
	}
	return out
}

func TestParseTokens(t *testing.T) {
	const read, write = principal.ScopePlantsRead, principal.ScopePlantsWrite
	for _, tc := range []struct {
		name, text string
		want       []tokenLine
	}{
		{"empty", "", nil},
		{"blank lines", "\n\n  \n\t\n", nil},
		{"comments only", "# prod tokens\n  # indented comment\n", nil},
		{"one per line", "alpha\nbeta\n", lines("alpha", "beta")},
		{"no final newline", "alpha\nbeta", lines("alpha", "beta")},
		{"crlf", "alpha\r\nbeta\r\n", lines("alpha", "beta")},
		{"surrounding spaces trimmed", "  alpha  \n\tbeta\t\n", lines("alpha", "beta")},
		{"mixed", "# rotated 2026-11-01\nnew-token\n\n# old, remove after the rollout\nold-token\n", lines("new-token", "old-token")},
		{"hash inside a token", "abc#def\n", lines("abc#def")},
		{"duplicates kept", "a\na\n", lines("a", "a")},
		{"one scope", "dash plants:read\n", []tokenLine{{Token: "dash", Scopes: []string{read}}}},
		{"two scopes, tabs", "ci\tplants:write  plants:read\r\n", []tokenLine{{Token: "ci", Scopes: []string{write, read}}}},
		{"repeated scope once", "ci plants:read plants:read\n", []tokenLine{{Token: "ci", Scopes: []string{read}}}},
		{"named", "dash name=dashboard plants:read\n", []tokenLine{{Token: "dash", Name: "dashboard", Scopes: []string{read}}}},
		{"named, every scope", "ops name=ops\n", []tokenLine{{Token: "ops", Name: "ops"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTokens(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseTokens(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
}

// TestParseTokensRefuses: a typo in a scope or a name is an error naming
// the line, never showing the token.
func TestParseTokensRefuses(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"ok\nsecret-1 plants:raed\n", `tokens file line 2: unknown scope "plants:raed" (known: plants:read, plants:write, webhooks:manage)`},
		{"secret-1 PLANTS:READ\n", `tokens file line 1: unknown scope "PLANTS:READ" (known: plants:read, plants:write, webhooks:manage)`},
		{"# c\n\nsecret-1 name=a name=b\n", "tokens file line 3: want one non-empty name="},
		{"secret-1 name=\n", "tokens file line 1: want one non-empty name="},
		// Spaces and tabs separate fields; a no-break space does not, so
		// the two scopes it joins are one unknown scope, refused.
		{"secret-1 plants:read\u00a0plants:write\n", `tokens file line 1: unknown scope "plants:read\u00a0plants:write" (known: plants:read, plants:write, webhooks:manage)`},
	} {
		got, err := parseTokens(tc.text)
		if err == nil || err.Error() != tc.want {
			t.Fatalf("parseTokens(%q) = %+v, %v; want the error %q", tc.text, got, err, tc.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("the error %q shows the token", err)
		}
	}
}

// TestTokensScopes: a line with scopes holds those only; a line without
// holds every scope; a name names the caller, the id stays the digest's.
func TestTokensScopes(t *testing.T) {
	tokens := newTokenSet([]string{"dev"})
	parsed, err := parseTokens("reader name=dashboard plants:read\nwriter plants:write\nall\n")
	if err != nil {
		t.Fatal(err)
	}
	tokens.Replace(parsed)
	for _, tc := range []struct {
		token       string
		name        string // "" for the digest's name
		read, write bool
	}{
		{"reader", "dashboard", true, false},
		{"writer", "", false, true},
		{"all", "", true, true},
		{"dev", "", true, true},
	} {
		p, err := tokens.Authenticate(t.Context(), tc.token)
		if err != nil {
			t.Fatalf("%s: %v", tc.token, err)
		}
		id := TokenName(sha256.Sum256([]byte(tc.token)))
		name := tc.name
		if name == "" {
			name = id
		}
		if p.ID != id || p.Name != name {
			t.Errorf("%s: principal %q named %q, want %q named %q", tc.token, p.ID, p.Name, id, name)
		}
		if p.Has(principal.ScopePlantsRead) != tc.read || p.Has(principal.ScopePlantsWrite) != tc.write {
			t.Errorf("%s: read %v write %v, want %v %v", tc.token, p.Has(principal.ScopePlantsRead), p.Has(principal.ScopePlantsWrite), tc.read, tc.write)
		}
	}
}

func TestSplitList(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
	}{
		{"", nil},
		{",", nil},
		{" , ,", nil},
		{"one", []string{"one"}},
		{"one,two", []string{"one", "two"}},
		{" one , two ,, three, ", []string{"one", "two", "three"}},
	} {
		if got := splitList(tc.list); !slices.Equal(got, tc.want) {
			t.Errorf("splitList(%q) = %q, want %q", tc.list, got, tc.want)
		}
	}
}
