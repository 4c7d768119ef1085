package maketest

import (
	"strings"
	"testing"
)

// fixture is a package whose tests pass and skip (testdata/skips); ./...
// never matches it, only an explicit PKGS does.
const fixture = "./internal/maketest/testdata/skips"

// TestTestSummarizesSkips: make test, without -v, ends with every skipped
// test and its reason, and under CI=true a skip fails the run.
func TestTestSummarizesSkips(t *testing.T) {
	t.Parallel()
	// First make sure make test would run only the fixture: a Makefile
	// without PKGS would run the whole suite, this test included.
	if dry := mustMake(t, "-n", "test", "PKGS="+fixture); !strings.Contains(dry, fixture) {
		t.Fatalf("make -n test PKGS=%s does not name the package; make test must take PKGS:\n%s", fixture, dry)
	}

	out, err := runMake(t, nil, "test", "PKGS="+fixture)
	if err != nil {
		t.Fatalf("make test on a passing and a skipping test: %v, want success\n%s", err, out)
	}
	summary := out[strings.LastIndex(out, "=== Skipped"):]
	for _, want := range []string{
		"=== SKIP: internal/maketest/testdata/skips TestSkipsWithAReason",
		"SKIPPED, NOT TESTED: the frobnicator is not installed",
		"DONE 2 tests, 1 skipped",
	} {
		if !strings.Contains(out, want) || !strings.Contains(summary, want) {
			t.Errorf("make test output lacks %q in its closing summary:\n%s", want, out)
		}
	}

	out, err = runMake(t, []string{"CI=true"}, "test", "PKGS="+fixture)
	if err == nil {
		t.Errorf("make test under CI=true with a skipped test succeeded, want a failure:\n%s", out)
	}
	if !strings.Contains(out, "CI=true: 1 skipped, every test must run in CI") {
		t.Errorf("make test under CI=true does not say why it failed:\n%s", out)
	}
}

// TestTestShortAllowsItsSkips: make test-short runs the tests with -short
// and, skipping being what -short is for, succeeds under CI=true with a
// skipped test, which its closing line counts without listing it.
func TestTestShortAllowsItsSkips(t *testing.T) {
	t.Parallel()
	if dry := mustMake(t, "-n", "test-short", "PKGS="+fixture); !strings.Contains(dry, fixture) || !strings.Contains(dry, " -short ") {
		t.Fatalf("make -n test-short PKGS=%s does not run the package with -short:\n%s", fixture, dry)
	}
	out, err := runMake(t, []string{"CI=true"}, "test-short", "PKGS="+fixture)
	if err != nil {
		t.Fatalf("make test-short under CI=true on a passing and a skipping test: %v, want success\n%s", err, out)
	}
	if !strings.Contains(out, "DONE 2 tests, 1 skipped") {
		t.Errorf("make test-short output does not count the skipped test:\n%s", out)
	}
	if strings.Contains(out, "=== Skipped") {
		t.Errorf("make test-short lists the skipped tests, which -short skips by design:\n%s", out)
	}
}
