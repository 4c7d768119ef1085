package maketest

import (
	"regexp"
	"strings"
	"testing"
)

// TestRunDoesNotClaimToServeBeforeItDoes: make run prints what it starts
// and the request to try; "serving" is the program's own word, logged once
// its start succeeded (cmd/plantstore's TestServingLineSaysWhatRuns).
func TestRunDoesNotClaimToServeBeforeItDoes(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"run", "docker-run"} {
		for line := range strings.Lines(dryRun(t, target)) {
			if strings.HasPrefix(line, "plantstore: ") && regexp.MustCompile(`\bserving on\b`).MatchString(line) {
				t.Errorf("make %s prints %q before the program has started", target, strings.TrimSpace(line))
			}
		}
	}
}
