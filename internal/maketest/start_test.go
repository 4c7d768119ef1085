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

// TestBenchSaysItBuildsFirst: make bench says what it is doing before the
// build of the benchmark and of plantstore, which takes a minute or more
// on a cold build cache.
func TestBenchSaysItBuildsFirst(t *testing.T) {
	t.Parallel()
	lines := strings.Split(dryRun(t, "bench"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "make bench: building the load benchmark, then plantstore") ||
		!strings.Contains(lines[1], " run ./tools/loadbench") {
		t.Errorf("make bench runs\n%s\nwant a line saying it builds first, then go run ./tools/loadbench", strings.Join(lines, "\n"))
	}
}
