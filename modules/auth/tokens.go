// Package auth checks bearer tokens on the API listener. Tokens come from a
// file that is watched and reloaded on change, so tokens rotate with no
// restart, and from a static list for development.
package auth

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"sync/atomic"
)

// Tokens is the set of accepted tokens; it is swapped whole on reload.
// Tokens are kept as SHA-256 digests and compared in constant time, so
// neither a token's content nor its length leaks through timing.
type Tokens struct {
	static  [][sha256.Size]byte
	current atomic.Pointer[[][sha256.Size]byte]
}

// NewTokens returns a set holding the static tokens (from --tokens).
func NewTokens(static []string) *Tokens {
	t := &Tokens{static: digests(static)}
	t.Replace(nil)
	return t
}

// Replace sets the reloadable tokens (from the tokens file); the static ones
// stay.
func (t *Tokens) Replace(fromFile []string) {
	all := append(digests(fromFile), t.static...)
	t.current.Store(&all)
}

// Len is the number of accepted tokens.
func (t *Tokens) Len() int { return len(*t.current.Load()) }

// Valid reports whether token is accepted. It compares against every token,
// never stopping early.
func (t *Tokens) Valid(token string) bool {
	return t.validDigest(sha256.Sum256([]byte(token)))
}

// validDigest is Valid for a token's SHA-256 digest.
func (t *Tokens) validDigest(d [sha256.Size]byte) bool {
	ok := 0
	for _, want := range *t.current.Load() {
		ok |= subtle.ConstantTimeCompare(d[:], want[:])
	}
	return ok == 1
}

func digests(tokens []string) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, 0, len(tokens))
	for _, tok := range tokens {
		out = append(out, sha256.Sum256([]byte(tok)))
	}
	return out
}

// ParseTokens reads one token per line; blank lines and lines starting with
// '#' are skipped and surrounding spaces trimmed.
func ParseTokens(text string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// SplitList splits a comma-separated token list (the --tokens flag).
func SplitList(list string) []string {
	var out []string
	for _, tok := range strings.Split(list, ",") {
		if tok = strings.TrimSpace(tok); tok != "" {
			out = append(out, tok)
		}
	}
	return out
}
