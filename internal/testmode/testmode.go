// Package testmode says which tests the inner loop leaves out. `make
// test-short` (go test -short) runs every unit and in-process test; a test
// that builds an image, starts a control plane, a chaos cluster, a
// replicated PostgreSQL pair, Docker or a child process of the built binary
// skips there, and `make test` (what CI runs) runs it.
package testmode

import (
	"flag"
	"strconv"
	"testing"
)

// SkipIfShort skips t under -short; why says what it needs that the inner
// loop leaves out ("builds the image", "runs the built binary").
func SkipIfShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s; make test runs it", why)
	}
}

// RaiseParallel sets -test.parallel, how many parallel tests (t.Parallel)
// run at once, to n unless the command line set it. go test's default is
// one per processor, which suits tests that compute; a package whose
// parallel tests mostly wait (on PostgreSQL, sockets, timeouts) calls it
// from TestMain, after flag.Parse.
func RaiseParallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err) // the testing package defines it before TestMain runs
		}
	}
}
