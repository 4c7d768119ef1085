package testmode_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testmode"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testmode.RaiseParallel(7)
	os.Exit(m.Run())
}

// TestRaiseParallel runs this test binary again, once as go test runs it
// and once with -test.parallel given: the first runs seven parallel tests
// at once, the second as many as it was told.
func TestRaiseParallel(t *testing.T) {
	if os.Getenv("TESTMODE_PRINT_PARALLEL") != "" {
		fmt.Printf("parallel=%s\n", flag.Lookup("test.parallel").Value)
		return
	}
	for args, want := range map[string]string{
		"":                   "parallel=7",
		"-test.parallel=3":   "parallel=3",
		"-test.parallel=128": "parallel=128",
	} {
		//nolint:gosec // G204: this test binary, with the arguments above
		cmd := exec.CommandContext(t.Context(), os.Args[0], strings.Fields("-test.run=^TestRaiseParallel$ "+args)...)
		// GORACE: a race-detector binary would wait a second before it exits.
		cmd.Env = append(os.Environ(), "TESTMODE_PRINT_PARALLEL=1", "GORACE=atexit_sleep_ms=0")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want+"\n") {
			t.Errorf("test binary %q: %v, printed\n%s\nwant %s", args, err, out, want)
		}
	}
}
