package httpserver

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
)

// pipeListener hands the server in-process connections (net.Pipe): a
// synctest bubble cannot wait on sockets.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
}

// dial opens a connection to the server and sends one GET on it.
func (l *pipeListener) dial(t *testing.T) (*bufio.Reader, net.Conn) {
	t.Helper()
	client, server := net.Pipe()
	l.conns <- server
	go func() { _, _ = io.WriteString(client, "GET /plants HTTP/1.1\r\nHost: plantstore\r\n\r\n") }()
	return bufio.NewReader(client), client
}

// TestServersStopTimesTheDrainAndTheShutdown, on synctest's clock with the
// flags' defaults (--drain-delay 5s, --shutdown-timeout 20s): Stop turns
// readiness 503 at once, the API keeps answering (with Connection: close)
// for exactly the drain delay, then a request still in its handler gets
// exactly the shutdown timeout before Stop gives up on it.
func TestServersStopTimesTheDrainAndTheShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cfg Config
		cfg.RegisterFlags(flag.NewFlagSet("plantstore", flag.ContinueOnError))
		hang, entered := make(chan struct{}), make(chan struct{}, 1)
		api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Hang") != "" {
				entered <- struct{}{}
				<-hang
			}
			_, _ = io.WriteString(w, "ok")
		})
		ready := NewReadiness(nil, zap.NewNop())
		s := NewServers(cfg, api, http.NotFoundHandler(), ready, zap.NewNop())
		ln := newPipeListener()
		go s.serve("api", s.api, framingListener{ln})

		// A request that stays in its handler through the drain.
		client, server := net.Pipe()
		ln.conns <- server
		go func() {
			_, _ = io.WriteString(client, "GET /plants HTTP/1.1\r\nHost: plantstore\r\nX-Hang: 1\r\n\r\n")
		}()
		<-entered
		hungAnswer := make(chan *http.Response, 1)
		go func() {
			resp, _ := http.ReadResponse(bufio.NewReader(client), nil)
			hungAnswer <- resp
		}()

		start := time.Now()
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()
		synctest.Wait()
		if !ready.Draining() {
			t.Fatal("readiness is not draining once Stop began")
		}
		// A second before the drain ends, the API still answers, closing
		// the connection after its answer.
		time.Sleep(5*time.Second - time.Second)
		r, conn := ln.dial(t)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !resp.Close {
			t.Fatalf("a request during the drain: %d, Connection: close %v; want 200 and close", resp.StatusCode, resp.Close)
		}
		_ = conn.Close()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned during the drain: %v", err)
		default:
		}

		// The drain ends at 5 s; the hung request then has 20 s.
		err = <-stopped
		if took := time.Since(start); took != 25*time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop returned %v after %v, want the shutdown's deadline after exactly 25s", err, took)
		}
		close(hang)
		if resp := <-hungAnswer; resp == nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the hung request, released after Stop: %v, want its 200", resp)
		}
		_ = client.Close()
	})
}
