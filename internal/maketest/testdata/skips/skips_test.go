// Package skips is make test's fixture for TestTestSummarizesSkips: one test
// passes, one skips with a reason that the summary must show.
package skips

import "testing"

func TestPasses(t *testing.T) {}

func TestSkipsWithAReason(t *testing.T) {
	t.Skip("SKIPPED, NOT TESTED: the frobnicator is not installed")
}
