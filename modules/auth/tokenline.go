package auth

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// tokenLine is one line of the tokens file:
//
//	<token> [name=<name>] [<scope> ...]
//
// A line without scopes grants every scope, as every token did before
// scopes existed, so that files written then keep their meaning.
type tokenLine struct {
	Token  string
	Name   string   // the caller's name in logs and spans; "" names it by the token's digest
	Scopes []string // nil: every scope
}

// parseTokens reads the tokens file: one token per line, with its optional
// name and scopes separated by spaces; blank lines and lines starting with
// '#' are skipped. A scope that no operation knows, or a name given twice,
// is an error naming the line (never the token), so that a typo does not
// quietly grant less, or more, than meant.
func parseTokens(text string) ([]tokenLine, error) {
	var out []tokenLine
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		fields := principal.ConfigFields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		line := tokenLine{Token: fields[0]}
		for _, f := range fields[1:] {
			if name, ok := strings.CutPrefix(f, "name="); ok {
				if line.Name != "" || name == "" {
					return nil, fmt.Errorf("tokens file line %d: want one non-empty name=", n)
				}
				line.Name = name
				continue
			}
			if !slices.Contains(principal.Scopes, f) {
				return nil, fmt.Errorf("tokens file line %d: unknown scope %q (known: %s)", n, f, strings.Join(principal.Scopes, ", "))
			}
			if !slices.Contains(line.Scopes, f) {
				line.Scopes = append(line.Scopes, f)
			}
		}
		out = append(out, line)
	}
	return out, sc.Err()
}
