// Package child builds plantstore and runs it as a child process of a
// measuring tool (tools/loadbench, tools/eventlatency): on free loopback
// ports, with one static token and no drain delay, ready once its admin
// listener's /readyz answers 200.
package child

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
)

// Build builds ./cmd/plantstore (run from the repository's root) into dir
// and returns the binary's path; tool names the caller in what it says.
func Build(dir, tool string) (string, error) {
	bin := filepath.Join(dir, "plantstore")
	fmt.Fprintln(os.Stderr, tool+": building plantstore")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/plantstore")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build plantstore: %w", err)
	}
	return bin, nil
}

// Server is a running plantstore.
type Server struct {
	Cmd *exec.Cmd
	API string // the API's base URL, http://127.0.0.1:port
}

// Start runs bin with the caller's environment, token as its one static
// token, and env (the store and anything else) added, and waits up to
// within for it to be ready. Its standard output is discarded; its
// standard error is the caller's.
func Start(bin, token string, within time.Duration, env ...string) (*Server, error) {
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	adminAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"PLANTSTORE_TOKENS="+token,
		"PLANTSTORE_HTTP_ADDR="+apiAddr,
		"PLANTSTORE_ADMIN_ADDR="+adminAddr,
		"PLANTSTORE_DRAIN_DELAY=0s",
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout = io.Discard
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Cmd: cmd, API: "http://" + apiAddr}
	err = poll.Until(context.Background(), 50*time.Millisecond, within, func() (bool, error) {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/readyz answered %d", resp.StatusCode)
	})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("plantstore did not become ready: %w", err)
	}
	return s, nil
}

// Stop interrupts the server, which drains and stops, and waits for it.
func (s *Server) Stop() {
	_ = s.Cmd.Process.Signal(os.Interrupt)
	_ = s.Cmd.Wait()
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
