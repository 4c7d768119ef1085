package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testmode"
)

// commandTimeout bounds every docker command but the image build, so a hung
// engine fails the test instead of stalling it.
const commandTimeout = 2 * time.Minute

// requireDocker skips the test when no Docker engine answers, or fails it
// under CI=true, where the engine is part of the test environment.
func requireDocker(t *testing.T) {
	t.Helper()
	testmode.SkipIfShort(t, "needs a Docker engine and the image")
	_, err := exec.LookPath("docker")
	if err == nil {
		_, err = runDocker(context.Background(), "info", "--format", "{{.ServerVersion}}")
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and no Docker engine answers: %v", err)
	}
	t.Skipf("SKIPPED, NOT TESTED: the Docker image: no Docker engine answers (%v); under CI=true this fails", err)
}

// runDocker runs the docker CLI and returns its trimmed standard output; the
// error carries standard error.
func runDocker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	return runDockerNoTimeout(ctx, args...)
}

func runDockerNoTimeout(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.New(strings.TrimSpace("docker " + args[0] + ": " + err.Error() + ": " + stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// docker runs the docker CLI and fails the test if it fails.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runDocker(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// inspect decodes `docker inspect --format {{json <field>}}` of object into v.
func inspect(t *testing.T, object, field string, v any) {
	t.Helper()
	out := docker(t, "inspect", "--format", "{{json "+field+"}}", object)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("docker inspect %s %s: %v in %s", field, object, err, out)
	}
}

// randomHex names the test's image, containers and volumes, so that test
// runs sharing an engine do not collide.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
