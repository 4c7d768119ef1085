package auth

import (
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	tokens := NewTokens([]string{"static-1", "static-2"})
	if tokens.Len() != 2 {
		t.Fatalf("Len = %d, want 2", tokens.Len())
	}
	tokens.Replace([]string{"file-1"})
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
	tokens.Replace([]string{"file-2", "file-3"})
	assertValid(t, tokens, map[string]bool{"static-1": true, "static-2": true, "file-1": false, "file-2": true, "file-3": true})
	tokens.Replace(nil)
	assertValid(t, tokens, map[string]bool{"static-1": true, "file-2": false})
	if tokens.Len() != 2 {
		t.Fatalf("Len = %d, want 2", tokens.Len())
	}
}

func TestTokensEmpty(t *testing.T) {
	tokens := NewTokens(nil)
	if tokens.Len() != 0 {
		t.Fatalf("Len = %d, want 0", tokens.Len())
	}
	assertValid(t, tokens, map[string]bool{"": false, "anything": false})
}

func assertValid(t *testing.T, tokens *Tokens, want map[string]bool) {
	t.Helper()
	for tok, ok := range want {
		if got := tokens.Valid(tok); got != ok {
			t.Errorf("Valid(%q) = %v, want %v", tok, got, ok)
		}
	}
}

func TestParseTokens(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", nil},
		{"blank lines", "\n\n  \n\t\n", nil},
		{"comments only", "# prod tokens\n  # indented comment\n", nil},
		{"one per line", "alpha\nbeta\n", []string{"alpha", "beta"}},
		{"no final newline", "alpha\nbeta", []string{"alpha", "beta"}},
		{"crlf", "alpha\r\nbeta\r\n", []string{"alpha", "beta"}},
		{"surrounding spaces trimmed", "  alpha  \n\tbeta\t\n", []string{"alpha", "beta"}},
		{"mixed", "# rotated 2026-11-01\nnew-token\n\n# old, remove after the rollout\nold-token\n", []string{"new-token", "old-token"}},
		{"hash inside a token", "abc#def\n", []string{"abc#def"}},
		{"duplicates kept", "a\na\n", []string{"a", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseTokens(tc.text); !slices.Equal(got, tc.want) {
				t.Fatalf("ParseTokens(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
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
		if got := SplitList(tc.list); !slices.Equal(got, tc.want) {
			t.Errorf("SplitList(%q) = %q, want %q", tc.list, got, tc.want)
		}
	}
}
