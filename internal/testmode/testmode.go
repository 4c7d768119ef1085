// Package testmode says which tests the inner loop leaves out. `make
// test-short` (go test -short) runs every unit and in-process test; a test
// that builds an image, starts a control plane, a chaos cluster, a
// replicated PostgreSQL pair, Docker or a child process of the built binary
// skips there, and `make test` (what CI runs) runs it.
package testmode

import "testing"

// SkipIfShort skips t under -short; why says what it needs that the inner
// loop leaves out ("builds the image", "runs the built binary").
func SkipIfShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s; make test runs it", why)
	}
}
