// Package buildlock lets the test packages that build the repository's
// Dockerfile (deploy/docker, deploy/compose) take turns, with the same
// build arguments. go test runs packages in parallel; two builds of the same
// Dockerfile at once each download the modules and commit the same layers.
// One after the other and with the same VERSION and REVISION (Args), the
// second finds every step up to the build stage's label in the engine's
// build cache: the program is compiled once per checkout, not once per
// package.
package buildlock

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/plantstore/plantstore/internal/repo"
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

// Args returns the VERSION and REVISION build arguments that every test
// package building the Dockerfile passes: the checkout's commit, and a
// version naming it ("e2e-" and the commit's first 12 hex digits). Builds of
// the same sources with them are cache hits after the first; a change in
// the working tree still misses at the sources' COPY, as it should.
func Args() (version, revision string, err error) {
	root, err := repo.Root()
	if err != nil {
		return "", "", err
	}
	//nolint:gosec // G204: git, in the repository's own root
	out, err := exec.CommandContext(context.Background(), "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	revision = strings.TrimSpace(string(out))
	if len(revision) < 12 {
		return "", "", fmt.Errorf("git rev-parse HEAD printed %q, want a commit id", revision)
	}
	return "e2e-" + revision[:12], revision, nil
}
