// Package buildlock lets the test packages that build the repository's
// Dockerfile (deploy/docker, deploy/compose) take turns. go test runs
// packages in parallel; two builds of the same Dockerfile at once each
// download the modules and commit the same layers. One after the other, the
// second finds the steps both share (the base, go.mod and go.sum, the module
// download, the sources) in the engine's build cache and compiles only what
// its own build arguments change.
package buildlock

import (
	"os"
	"path/filepath"
	"syscall"
)

// path is shared by every checkout on the machine: they share the engine
// and its build cache.
var path = filepath.Join(os.TempDir(), "plantstore-dockerfile-build.lock")

// Lock waits for the other builds of the Dockerfile on this machine, then
// holds the lock until unlock is called (or the process ends).
func Lock() (unlock func(), err error) {
	return File(path)
}

// File takes an exclusive lock on the file at path (made if missing),
// waiting for another holder, in this process or another; unlock releases
// it, and so does the process's end.
func File(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666) //nolint:gosec // G304: the lock file's path is the caller's own
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}
