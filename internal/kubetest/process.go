package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// process is one running program of the control plane, its output in a log
// file in the run's directory.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when it exited
	err  error         // its exit, once done is closed
}

func startProcess(dir, bin, name string, args ...string) (*process, error) {
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.CommandContext(context.Background(), filepath.Join(bin, name), args...) //nolint:gosec // G204: our own build
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Dir = dir
	// Killed with the test binary, should it die without stopping us.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports an error when the process has already stopped.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.tail())
	default:
		return nil
	}
}

// stop sends SIGTERM and waits for the exit; SIGKILL after 20 s.
func (p *process) stop() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s had exited before the end: %v\n%s", p.name, p.err, p.tail())
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 20s of SIGTERM", p.name)
	}
	return nil
}

// tail is the end of the log, for error messages.
func (p *process) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return "--- " + p.log + " (end) ---\n" + string(b)
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before ours listens; the start then fails loudly, never silently.
func freePort() (string, error) {
	l, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return "", errors.New("not a TCP address")
	}
	return strconv.Itoa(addr.Port), nil
}
