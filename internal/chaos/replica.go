package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/plantstore/plantstore/internal/repo"
)

// Token is the API token every replica accepts and the clients send.
const Token = "chaos-token-0123456789"

// BuildBinary builds cmd/plantstore into dir, without the race detector: a
// replica under the detector is several times slower, and the detector is
// not what this test is about (make test runs it over the in-process
// tests).
func BuildBinary(dir string) (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "plantstore")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/plantstore")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// FreePort is a loopback port the kernel just gave out. The replicas keep
// theirs across restarts, since HAProxy's configuration names them.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Replica is one plantstore child process, restartable on the same ports.
type Replica struct {
	Name      string
	APIPort   int
	AdminPort int
	bin       string
	env       []string
	logPath   string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	starts  int
}

// NewReplica prepares a replica; env configures its store. Its output goes
// to logDir/<name>.log, appended across restarts.
func NewReplica(name, bin, logDir string, env []string) (*Replica, error) {
	api, err := FreePort()
	if err != nil {
		return nil, err
	}
	admin, err := FreePort()
	if err != nil {
		return nil, err
	}
	return &Replica{Name: name, APIPort: api, AdminPort: admin, bin: bin, env: env,
		logPath: filepath.Join(logDir, name+".log")}, nil
}

// LogPath is the file the replica's output goes to.
func (r *Replica) LogPath() string { return r.logPath }

// Start runs the process and waits until its /readyz answers 200.
func (r *Replica) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.cmd != nil {
		r.mu.Unlock()
		return fmt.Errorf("%s: already running", r.Name)
	}
	log, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	r.starts++
	fmt.Fprintf(log, "--- chaos: start %d of %s\n", r.starts, r.Name)
	//nolint:gosec // G204: the binary this package built
	cmd := exec.Command(r.bin)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"PLANTSTORE_HTTP_ADDR=127.0.0.1:" + strconv.Itoa(r.APIPort),
		"PLANTSTORE_ADMIN_ADDR=127.0.0.1:" + strconv.Itoa(r.AdminPort),
		"PLANTSTORE_TOKENS=" + Token,
		"PLANTSTORE_LOG_LEVEL=warn",
		// Longer than HAProxy takes to see readiness fail (fall 2, inter
		// 300ms, plus a loaded machine's slack): no request arrives after
		// the API stops listening.
		"PLANTSTORE_DRAIN_DELAY=3s",
	}, r.env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		log.Close()
		return err
	}
	exited := make(chan struct{})
	r.cmd, r.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		log.Close()
		r.mu.Lock()
		r.waitErr = err
		r.mu.Unlock()
		close(exited)
	}()
	r.mu.Unlock()
	return r.waitReady(ctx, exited)
}

// waitReady polls /readyz until 200, the process exits or ctx ends.
func (r *Replica) waitReady(ctx context.Context, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 3 * time.Second}
	for {
		if r.Ready(client) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready: %v (log %s)", r.Name, r.waitErr, r.logPath)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (log %s)", r.Name, ctx.Err(), r.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Ready reports whether /readyz answers 200.
func (r *Replica) Ready(client *http.Client) bool {
	return r.ReadyzStatus(client) == http.StatusOK
}

// ReadyzStatus is /readyz's status, 0 when it does not answer.
func (r *Replica) ReadyzStatus(client *http.Client) int {
	resp, err := client.Get("http://127.0.0.1:" + strconv.Itoa(r.AdminPort) + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Kill sends SIGKILL and waits for the process to be gone.
func (r *Replica) Kill() error {
	return r.signal(syscall.SIGKILL, 10*time.Second)
}

// Terminate sends SIGTERM and waits for the drain and shutdown; a clean
// stop exits 0.
func (r *Replica) Terminate() error {
	if err := r.signal(syscall.SIGTERM, 60*time.Second); err != nil {
		return err
	}
	r.mu.Lock()
	waitErr := r.waitErr
	r.mu.Unlock()
	if waitErr != nil {
		return fmt.Errorf("%s after SIGTERM: %v (log %s)", r.Name, waitErr, r.logPath)
	}
	return nil
}

// signal sends sig and waits for the process to exit; its exit status is
// then in waitErr.
func (r *Replica) signal(sig syscall.Signal, wait time.Duration) error {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s: not running", r.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	var err error
	select {
	case <-exited:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-exited
		err = fmt.Errorf("%s did not exit within %s of %s", r.Name, wait, sig)
	}
	r.mu.Lock()
	r.cmd = nil
	r.mu.Unlock()
	return err
}

// Stop kills the process if it runs (the end of a run).
func (r *Replica) Stop() {
	r.mu.Lock()
	running := r.cmd != nil
	r.mu.Unlock()
	if running {
		_ = r.Kill()
	}
}
