package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/buildlock"
	"github.com/plantstore/plantstore/internal/repo"
)

// buildTimeout bounds the image build, which compiles the whole program.
const buildTimeout = 20 * time.Minute

// plantedTokens are token files a user may well have in the checkout (the
// README's secrets/tokens, docs/kubernetes.md's tokens.txt, and one left in
// a source directory by mistake), each with a value of its own, so that a
// leak says which file leaked. The image is built from a copy of the
// checkout that has them; none may reach the image or the build's layers.
var plantedTokens = map[string]string{
	"secrets/tokens":              "planted-secrets-tokens-" + randomHex(16),
	"tokens.txt":                  "planted-tokens-txt-" + randomHex(16),
	"cmd/plantstore/tokens.txt":   "planted-source-tokens-txt-" + randomHex(16),
	"deploy/k8s/secrets/tokens":   "planted-deploy-tokens-" + randomHex(16),
	"internal/secrets/tokens.txt": "planted-internal-tokens-" + randomHex(16),
}

const pullHint = "(where the engine cannot pull the base images, run scripts/ci-images.sh first, and again after go.mod or go.sum change)"

// The image is built once per test binary and shared by every test; TestMain
// removes it, with everything the build made.
var built struct {
	once              sync.Once
	checkout          string // the copy of the checkout it is built from
	name, tag         string // IMAGE and IMAGE:VERSION
	stage             string // the build stage of the same build, tagged
	buildID           string // make docker-build's BUILD_ID: its build stage's label
	version, revision string
	err               error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, tag := range []string{built.tag, built.name + ":latest", built.stage} {
		if built.name == "" {
			break
		}
		if tag == "" {
			continue
		}
		if _, err := runDocker(context.Background(), "rmi", tag); err != nil && !strings.Contains(err.Error(), "No such image") {
			fmt.Fprintln(os.Stderr, "removing the test image:", err)
		}
	}
	if built.checkout != "" {
		_ = os.RemoveAll(built.checkout)
	}
	os.Exit(code)
}

// image builds the repository's Dockerfile with `make docker-build`, as a
// user does, from a copy of the checkout with token files planted in it, and
// returns the image's tag. The version and revision are buildlock.Args, the
// ones deploy/compose builds with: the .dockerignore keeps the planted files
// out of the context, so whichever package builds second compiles nothing.
//
// The build stage is built first, on its own and tagged (built.stage), for
// TestTokenFilesStayOutOfTheImage to read. make docker-build then finds every
// step of that stage but its BUILD_ID label in the engine's cache, so the
// program is compiled once, not twice; it still makes and removes a build
// stage image of its own (the label), which TestBuildLeavesNothingBehind
// checks is gone.
func image(t *testing.T) string {
	t.Helper()
	requireDocker(t)
	built.once.Do(func() {
		suffix := randomHex(4)
		built.version, built.revision, built.err = buildlock.Args()
		if built.err != nil {
			return
		}
		built.name = "plantstore-e2e-" + suffix
		built.buildID = "e2e-" + suffix
		built.checkout, built.err = copyCheckout()
		if built.err != nil {
			return
		}
		// In turn with deploy/compose, which builds the same Dockerfile with
		// the same arguments: the second build is all cache.
		unlock, err := buildlock.Lock()
		if err != nil {
			built.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		stage := built.name + "-stage:build"
		out, err := runDockerNoTimeout(ctx, "build", "--force-rm", "--target", "build",
			"--build-arg", "VERSION="+built.version, "--build-arg", "REVISION="+built.revision,
			"--build-arg", "BUILD_ID=stage-"+suffix, "--tag", stage, built.checkout)
		unlock()
		if err != nil {
			built.err = fmt.Errorf("building the build stage: %w\n%s\n%s", err, lastLines(out, 40), pullHint)
			return
		}
		built.stage = stage
		out, err = runMake(ctx, built.checkout, "docker-build", "IMAGE="+built.name,
			"VERSION="+built.version, "REVISION="+built.revision, "BUILD_ID="+built.buildID)
		if err != nil {
			built.err = fmt.Errorf("make docker-build: %w\n%s\n%s", err, lastLines(out, 40), pullHint)
			return
		}
		built.tag = built.name + ":" + built.version
	})
	if built.err != nil {
		t.Fatalf("building the image: %v", built.err)
	}
	return built.tag
}

// copyCheckout copies the checkout's files (tracked, and untracked but not
// ignored: what a developer would build) to a new directory and plants the
// token files in it.
func copyCheckout() (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files: %w", err)
	}
	dir, err := os.MkdirTemp("", "plantstore-e2e-checkout-")
	if err != nil {
		return "", err
	}
	for name := range strings.SplitSeq(strings.TrimRight(string(list), "\x00"), "\x00") {
		if err := copyFile(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
			return dir, err
		}
	}
	for name, token := range plantedTokens {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return dir, err
		}
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil // deleted in the working tree, not yet in git
	}
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil || st.IsDir() {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// runMake runs make in dir, with none of the make variables of a make that
// may be running the tests, and returns its output.
func runMake(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory", "-C", dir}, args...)...)
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "MAKEFLAGS", "MAKELEVEL", "MFLAGS":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestBuildLeavesNothingBehind: after make docker-build, the engine holds
// the tagged image and not the build stage's. (The classic builder kept the
// build stage, about 600 MB, as an untagged image after each build.) The
// Makefile labels that stage with its BUILD_ID, random per build; the test
// names it, to look for exactly this build's stage.
func TestBuildLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	image(t)
	ids := docker(t, "images", "--all", "--quiet", "--no-trunc", "--filter", "label=org.plantstore.build-stage="+built.buildID)
	if ids = strings.TrimSpace(ids); ids != "" {
		t.Errorf("make docker-build left its build stage behind: %s", ids)
	}
}
