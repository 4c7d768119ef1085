package maketest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/repo"
)

// makeTimeout bounds one make command; make run and make test build first.
const makeTimeout = 10 * time.Minute

// root is the repository's root, where the Makefile is.
func root(t *testing.T) string {
	t.Helper()
	dir, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// makeCommand is make in dir with the given environment on top of the
// test's, less CI (each test says whether it wants CI=true) and make's own
// variables (a make around `go test` must not leak its flags into these).
func makeCommand(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory", "-C", dir}, args...)...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "CI", "MAKEFLAGS", "MAKELEVEL", "MFLAGS":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// runMake runs make in the repository to its end and returns its standard
// output and error together, and its error.
func runMake(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), makeTimeout)
	defer cancel()
	cmd := makeCommand(ctx, root(t), env, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// mustMake runs make in the repository and fails the test if it fails.
func mustMake(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runMake(t, nil, args...)
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// makeVariable is the value of a variable of dir's Makefile as make
// computes it.
func makeVariable(t *testing.T, dir, name string) string {
	t.Helper()
	cmd := makeCommand(t.Context(), dir, nil, "-s", "--eval", "print-%: ; @echo $($*)", "print-"+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make print-%s: %v\n%s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}
