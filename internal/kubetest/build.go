package kubetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/buildlock"
	"github.com/plantstore/plantstore/internal/repo"
)

// errCannotBuild means the control plane's programs could not be built: no
// go command, or the module proxy did not answer. Tests skip on it outside CI.
var errCannotBuild = errors.New("kubetest: cannot build the control plane from the Go module proxy")

// buildModule is one of the tiny main modules under build/ and the programs
// (its subdirectories, or "." for the module itself) it builds.
type buildModule struct {
	dir      string // under internal/kubetest/build
	programs []string
}

var (
	etcdModule       = buildModule{dir: "etcd", programs: []string{"etcd"}}
	kubernetesModule = buildModule{dir: "kubernetes", programs: []string{"kube-apiserver", "kube-controller-manager", "kubectl"}}
)

// binaries returns the directory holding the module's programs, building
// them first unless the cache has them. Concurrent test binaries (go test
// runs packages in parallel) take turns through a lock file, so only the
// first one builds.
func (m buildModule) binaries() (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "internal", "kubetest", "build", m.dir)
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: %v", errCannotBuild, err)
	}
	key, err := cacheKey(goBin, src)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "plantstore-kubetest", m.dir+"-"+key)
	if m.built(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return "", err
	}
	unlock, err := buildlock.File(dir + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if m.built(dir) { // another test binary built it while we waited
		return dir, nil
	}
	return dir, m.build(goBin, src, dir)
}

// built reports whether every program is in dir.
func (m buildModule) built(dir string) bool {
	for _, p := range m.programs {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// build runs go build in the module and moves the programs into dir in one
// rename, so that a build cut short leaves no half-filled cache entry.
func (m buildModule) build(goBin, src, dir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	args := []string{"build", "-o", tmp + string(filepath.Separator)}
	for _, p := range m.programs {
		args = append(args, "./"+p)
	}
	if len(m.programs) == 1 && m.programs[0] == m.dir {
		args = append(args[:len(args)-1], ".")
	}
	fmt.Fprintf(os.Stderr, "kubetest: building %s (%s) from the Go module proxy into %s; the first build takes minutes, later ones reuse the cache\n",
		strings.Join(m.programs, ", "), src, dir)
	start := time.Now()
	cmd := exec.CommandContext(context.Background(), goBin, args...) //nolint:gosec // G204: our own build of our own modules
	cmd.Dir = src
	// -mod=mod: the module's go.sum pins every hash, and a go.sum entry the
	// toolchain wants to add does not fail the build. -buildvcs=false: the
	// programs need no stamp of the repository's state. GOWORK=off: a
	// go.work of the developer's must not pull these modules into the main
	// build.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: go %s in %s: %v\n%s", errCannotBuild, strings.Join(args, " "), src, err, out.Bytes())
	}
	fmt.Fprintf(os.Stderr, "kubetest: built %s in %s\n", strings.Join(m.programs, ", "), time.Since(start).Round(time.Second))
	return os.Rename(tmp, dir)
}

// cacheKey hashes the module's files and the Go version: a change to a
// pinned version (go.mod), a hash (go.sum), a main.go or the toolchain
// builds anew.
func cacheKey(goBin, src string) (string, error) {
	h := sha256.New()
	version, err := exec.CommandContext(context.Background(), goBin, "env", "GOVERSION").Output() //nolint:gosec // G204: the go command
	if err != nil {
		return "", fmt.Errorf("%w: go env GOVERSION: %v", errCannotBuild, err)
	}
	h.Write(version)
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path) //nolint:gosec // G304: the repository's own files
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Build builds every program into the cache, or finds it there, and
// returns the directories that hold them.
func Build() ([]string, error) {
	var dirs []string
	for _, m := range []buildModule{etcdModule, kubernetesModule} {
		dir, err := m.binaries()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "kubetest: %s in %s\n", strings.Join(m.programs, ", "), dir)
		dirs = append(dirs, dir)
	}
	return dirs, nil
}
