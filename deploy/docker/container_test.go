package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
)

// The container's shutdown settings: short, so that the test is quick, and
// the bound docker stop is given, so that a stop which overruns them ends in
// SIGKILL and exit code 137 instead of 0.
const (
	drainDelay      = 1 * time.Second
	shutdownTimeout = 5 * time.Second
)

var stopGrace = strconv.Itoa(int((drainDelay + shutdownTimeout).Seconds()))

// healthTimeout bounds the wait for the HEALTHCHECK to report healthy; with
// a check every second it is normally reached within a few seconds.
const healthTimeout = 2 * time.Minute

// TestContainer runs the image as the README does and as an orchestrator
// would: read-only root filesystem, no capabilities, a token, a named volume.
func TestContainer(t *testing.T) {
	t.Parallel()
	tag := image(t)
	suffix := randomHex(4)
	name, volume, token := "plantstore-e2e-"+suffix, "plantstore-e2e-"+suffix, "e2e-token-"+randomHex(8)

	docker(t, "volume", "create", volume)
	t.Cleanup(func() { _, _ = runDocker(context.Background(), "volume", "rm", "--force", volume) })
	docker(t, "create", "--name", name,
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--health-interval", "1s",
		"--env", "PLANTSTORE_TOKENS="+token,
		"--env", "PLANTSTORE_DRAIN_DELAY="+drainDelay.String(),
		"--env", "PLANTSTORE_SHUTDOWN_TIMEOUT="+shutdownTimeout.String(),
		"--volume", volume+":/var/lib/plantstore",
		"--publish", "127.0.0.1::8080", "--publish", "127.0.0.1::9090",
		tag)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := runDocker(context.Background(), "logs", name)
			t.Logf("container logs:\n%s", logs)
		}
		_, _ = runDocker(context.Background(), "rm", "--force", "--volumes", name)
	})

	docker(t, "start", name)
	waitHealthy(t, name)
	api := "http://" + hostPort(t, name, "8080/tcp")

	const monstera = `{"id":1,"name":"Monstera","tag":"tropical"}`
	expect(t, post(t, api, "not-"+token, monstera),
		http.StatusUnauthorized, `{"error":401,"message":"the bearer token is not valid"}`)
	expect(t, post(t, api, token, monstera), http.StatusOK, `{"name":"Monstera","tag":"tropical"}`)
	checkProcessUser(t, name)

	stopGracefully(t, name)

	// Started again on the same volume, it still has the plant: the image's
	// default store keeps its data under the volume.
	docker(t, "start", name)
	waitHealthy(t, name)
	api = "http://" + hostPort(t, name, "8080/tcp") // a new host port after the restart
	expect(t, get(t, api+"/plants/1", token), http.StatusOK, `{"id":1,"name":"Monstera","tag":"tropical"}`)

	stopGracefully(t, name)
}

type containerState struct {
	Status    string
	Running   bool
	ExitCode  int
	OOMKilled bool
	Health    *struct {
		Status string
		Log    []struct {
			ExitCode int
			Output   string
		}
	}
}

// waitHealthy waits, bounded, for the image's HEALTHCHECK to report healthy,
// and fails at once if the container stops or turns unhealthy instead.
func waitHealthy(t *testing.T, name string) {
	t.Helper()
	poll.Wait(t, 250*time.Millisecond, healthTimeout, "container "+name+" healthy", func() (bool, error) {
		var st containerState
		inspect(t, name, ".State", &st)
		switch {
		case !st.Running:
			return false, poll.Stop(fmt.Errorf("it is %s (exit code %d) instead of running", st.Status, st.ExitCode))
		case st.Health == nil:
			return false, poll.Stop(errors.New("it has no health status: the image has no HEALTHCHECK"))
		case st.Health.Status == "unhealthy":
			return false, poll.Stop(fmt.Errorf("its health is %q; checks: %+v", st.Health.Status, st.Health.Log))
		}
		return st.Health.Status == "healthy", fmt.Errorf("its health is %q; checks: %+v", st.Health.Status, st.Health.Log)
	})
}

// stopGracefully stops the container allowing it drain delay plus shutdown
// timeout before SIGKILL, and checks that it exited by itself with code 0.
func stopGracefully(t *testing.T, name string) {
	t.Helper()
	docker(t, "stop", "-t", stopGrace, name)
	var st containerState
	inspect(t, name, ".State", &st)
	if st.Running || st.ExitCode != 0 || st.OOMKilled {
		t.Fatalf("after docker stop -t %s: state %s, exit code %d, OOM-killed %v; want exited with 0 (137 means it overran %v and was killed)",
			stopGrace, st.Status, st.ExitCode, st.OOMKilled, drainDelay+shutdownTimeout)
	}
}

// checkProcessUser checks, as the engine sees it, that every process in the
// container, the server among them, runs as uid and gid 65532.
func checkProcessUser(t *testing.T, name string) {
	t.Helper()
	out := docker(t, "top", name, "-eo", "pid,uid,gid,args")
	lines := strings.Split(out, "\n")
	server := false
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != "65532" || f[2] != "65532" {
			t.Errorf("docker top: process %q, want uid and gid 65532", line)
			continue
		}
		server = server || strings.Join(f[3:], " ") == "/plantstore"
	}
	if !server {
		t.Errorf("docker top shows no /plantstore process:\n%s", out)
	}
}

// hostPort is the 127.0.0.1 address the container's port is published on.
func hostPort(t *testing.T, name, port string) string {
	t.Helper()
	var ports map[string][]struct {
		HostIP   string `json:"HostIp"` // docker's spelling
		HostPort string
	}
	inspect(t, name, ".NetworkSettings.Ports", &ports)
	for _, b := range ports[port] {
		if b.HostIP == "127.0.0.1" {
			return b.HostIP + ":" + b.HostPort
		}
	}
	t.Fatalf("%s of %s is not published on 127.0.0.1: %v", port, name, ports)
	return ""
}

type answer struct {
	status      int
	contentType string
	body        string
}

func post(t *testing.T, api, token, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, api+"/plants", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req, token)
}

func get(t *testing.T, url, token string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req, token)
}

func do(t *testing.T, req *http.Request, token string) answer {
	t.Helper()
	req.Header.Set("Authorization", "Bearer "+token)
	client := http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

func expect(t *testing.T, got answer, status int, body string) {
	t.Helper()
	if got.status != status || got.contentType != "application/json" || got.body != body {
		t.Errorf("got %d %s %s\nwant %d application/json %s", got.status, got.contentType, got.body, status, body)
	}
}
