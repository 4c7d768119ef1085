package compose

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/buildlock"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/internal/testmode"
)

const token = "compose-test-token"

// TestComposeUp starts the stack as the README says, with one command, on
// the local Docker engine: the plantstore image built from the Dockerfile,
// PostgreSQL and HAProxy from their images (on a machine that cannot pull,
// the stand-ins of scripts/ci-images.sh and scripts/compose-images.sh).
// A plant created through the load balancer is read back from each of the
// three replicas; everything is removed afterwards.
func TestComposeUp(t *testing.T) {
	testmode.SkipIfShort(t, "builds the image and starts the compose project")
	bin := need(t, "docker-compose")
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no Docker engine answers: %v", err)
		}
		t.Skipf("SKIPPED, NOT TESTED: no Docker engine answers (%v)", err)
	}
	for _, image := range []string{"postgres:15-bookworm", "haproxy:2.6-bookworm", "golang:1.26-bookworm", "gcr.io/distroless/static-debian12:nonroot"} {
		if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
			msg := fmt.Sprintf("image %s is missing; on a machine that cannot pull, run scripts/ci-images.sh and scripts/compose-images.sh", image)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED, NOT TESTED: " + msg)
		}
	}
	// Built with the arguments deploy/docker builds with, so that of the two
	// packages' builds of the Dockerfile the second is all cache.
	version, revision, err := buildlock.Args()
	if err != nil {
		t.Fatal(err)
	}
	id := randomHex(t)
	lbPort, statsPort := freePort(t), freePort(t)
	project := "plantstore-compose-" + id
	env := append(os.Environ(),
		"PLANTSTORE_TOKENS="+token,
		"PLANTSTORE_LB_PORT="+strconv.Itoa(lbPort),
		"PLANTSTORE_STATS_PORT="+strconv.Itoa(statsPort),
		"PLANTSTORE_BUILD_ID="+id,
		"PLANTSTORE_VERSION="+version,
		"PLANTSTORE_REVISION="+revision,
	)
	compose := func(timeout time.Duration, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-p", project, "-f", "docker-compose.yaml"}, args...)...)
		cmd.Env = env
		// docker-compose's own children (docker build) may outlive it and
		// hold its output open; stop waiting for them.
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := compose(time.Minute, "logs", "--no-color", "--tail", "40")
			t.Logf("docker-compose logs:\n%s", logs)
		}
		if out, err := compose(5*time.Minute, "down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
		_ = exec.Command("docker", "rmi", "plantstore:compose").Run()
		_ = exec.Command("docker", "image", "prune", "--force", "--filter", "label=org.plantstore.build-stage="+id).Run()
	})
	// The one command of the README (detached here, so the test goes on),
	// in turn with deploy/docker's build of the Dockerfile.
	unlock, err := buildlock.Lock()
	if err != nil {
		t.Fatal(err)
	}
	out, err := compose(20*time.Minute, "up", "-d", "--build")
	unlock()
	if err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}

	lb := "http://127.0.0.1:" + strconv.Itoa(lbPort)
	body := `{"id":4711,"name":"Monstera","tag":"tropical"}`
	eventually(t, 5*time.Minute, "a create through the load balancer answers 200", func() (bool, string) {
		status, _, got := request(http.MethodPost, lb+"/plants", body)
		return status == http.StatusOK, fmt.Sprintf("%d %s", status, got)
	})
	// Every replica serves it: they share the database. HAProxy brings each
	// in as its /readyz passes, so this waits for all three.
	seen := map[string]bool{}
	eventually(t, 3*time.Minute, "the plant read back from all three replicas", func() (bool, string) {
		status, replica, got := request(http.MethodGet, lb+"/plants/4711", "")
		if status == http.StatusOK && strings.Contains(got, `"name":"Monstera"`) {
			seen[replica] = true
		} else if status != 0 {
			t.Fatalf("GET through the load balancer: %d %s (replica %q)", status, got, replica)
		}
		return seen["plantstore-1"] && seen["plantstore-2"] && seen["plantstore-3"], fmt.Sprint(seen)
	})
}

func request(method, url, body string) (status int, replica, answer string) {
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, "", err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Replica"), string(b)
}

// eventually polls cond every half second until it holds or timeout
// passes; cond's string says what it saw instead.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Wait(t, 500*time.Millisecond, timeout, what, func() (bool, error) {
		ok, last := cond()
		if last == "" {
			return ok, nil
		}
		return ok, errors.New(last)
	})
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
