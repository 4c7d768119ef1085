package maketest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/internal/testmode"
)

// curlLine is the request make run prints for an API at url.
func curlLine(url string) string {
	return `  curl -i -H 'Authorization: Bearer dev-token' -H 'Content-Type: application/json' -d '{"id":1,"name":"Monstera","tag":"tropical"}' ` + url + "/plants"
}

// TestRunListensOnLoopbackByDefault: the development token is public and
// the admin listener has no auth (PUT /loglevel), so make run keeps both
// listeners off the network unless told otherwise.
func TestRunListensOnLoopbackByDefault(t *testing.T) {
	t.Parallel()
	out := dryRun(t, "run")
	for _, want := range []string{
		"PLANTSTORE_HTTP_ADDR=127.0.0.1:8080 ",
		"PLANTSTORE_ADMIN_ADDR=127.0.0.1:9090 ",
		curlLine("http://127.0.0.1:8080"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make -n run lacks %q:\n%s", want, out)
		}
	}
}

// TestRunPrintsAUsableCurlLine checks the printed URL for each form of
// HTTP_ADDR: with a host, and without one (every interface).
func TestRunPrintsAUsableCurlLine(t *testing.T) {
	t.Parallel()
	for addr, url := range map[string]string{
		"127.0.0.1:8081": "http://127.0.0.1:8081",
		":8081":          "http://localhost:8081",
		"[::1]:8081":     "http://[::1]:8081",
	} {
		out := dryRun(t, "run", "HTTP_ADDR="+addr)
		if !strings.Contains(out, curlLine(url)+"\n") {
			t.Errorf("make -n run HTTP_ADDR=%s does not print %q:\n%s", addr, curlLine(url), out)
		}
	}
}

// TestRunServesWhereItSays runs make run on two free ports, as a newcomer
// would, pastes the printed request, and asks the admin listener, which must
// be on ADMIN_ADDR.
func TestRunServesWhereItSays(t *testing.T) {
	t.Parallel()
	testmode.SkipIfShort(t, "builds and runs the binary through make run")
	dir := t.TempDir()
	api, admin := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithTimeout(t.Context(), makeTimeout)
	defer cancel()
	cmd := makeCommand(ctx, root(t), []string{"PLANTSTORE_DRAIN_DELAY=0s"}, "run",
		"HTTP_ADDR="+api, "ADMIN_ADDR="+admin,
		"DATA_DIR="+filepath.Join(dir, "data"), "BIN="+filepath.Join(dir, "plantstore"))
	// Its own process group, so that the interrupt reaches the server as a
	// Ctrl-C in a terminal would, and nothing outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, output := io.Pipe()
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The output ends when make does, whatever ends it.
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = output.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	var printed []string
	var curl string
	for line := range lines {
		printed = append(printed, line)
		if strings.HasPrefix(line, "  curl ") {
			curl = line
			break
		}
	}
	if want := curlLine("http://" + api); curl != want {
		t.Fatalf("make run printed the request\n%q\nwant\n%q\noutput:\n%s", curl, want, strings.Join(printed, "\n"))
	}
	go func() { // keep reading, so the server never blocks on a full pipe
		for range lines {
		}
	}()

	waitReady(t, "http://"+admin+"/readyz")
	url := curl[strings.LastIndex(curl, " ")+1:]
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"id":1,"name":"Monstera","tag":"tropical"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer dev-token")
	req.Header.Set("Content-Type", "application/json")
	status, body := do(t, req)
	if status != http.StatusOK || body != `{"name":"Monstera","tag":"tropical"}` {
		t.Errorf("the printed request answered %d %s, want 200 {\"name\":\"Monstera\",\"tag\":\"tropical\"}", status, body)
	}

	// Ctrl-C: make itself reports the interrupt with a status of its own, so
	// only that everything stops is checked, not the status.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-exited
}

// dryRun is what make would run for the arguments (make -n), with the
// output of its echo lines, as make would print them, in their place.
func dryRun(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	for line := range strings.Lines(mustMake(t, append([]string{"-n"}, args...)...)) {
		if !strings.HasPrefix(line, "echo ") {
			b.WriteString(line)
			continue
		}
		out, err := exec.CommandContext(t.Context(), "sh", "-c", line).Output()
		if err != nil {
			t.Fatalf("sh -c %s: %v", line, err)
		}
		b.Write(out)
	}
	return b.String()
}

// freeAddr is a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// waitReady polls url until it answers 200; make run builds first, so this
// is bounded by the build's time, not the server's.
func waitReady(t *testing.T, url string) {
	t.Helper()
	poll.Wait(t, 100*time.Millisecond, makeTimeout, url+" to answer 200", func() (bool, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("status %d", resp.StatusCode)
	})
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
