package httpserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/poll"
)

// TestServersDrain runs both listeners and stops them: readiness turns 503
// at once while the API keeps answering (closing each connection after its
// answer), until the drain ends. The drain is ended by cancelling Stop's
// context rather than by waiting for a delay, so nothing here is timed.
func TestServersDrain(t *testing.T) {
	ready := NewReadiness(nil, zap.NewNop())
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	s := NewServers(Config{
		Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		DrainDelay: time.Hour, ShutdownTimeout: 10 * time.Second,
	}, api, NewAdminHandler(ready, nil), ready, zap.NewNop())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	apiURL, adminURL := "http://"+s.APIAddr().String(), "http://"+s.AdminAddr().String()
	client := &http.Client{Timeout: 10 * time.Second}

	if resp, _ := get(t, client, adminURL+ReadyzPath); resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz before stop = %d", resp.StatusCode)
	}
	if resp, _ := get(t, client, apiURL); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("API before stop = %d, close %v", resp.StatusCode, resp.Close)
	}

	ctx, endDrain := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(ctx) }()

	poll.Wait(t, time.Millisecond, 10*time.Second, "Stop to start draining", func() (bool, error) { return ready.Draining(), nil })
	if resp, _ := get(t, client, adminURL+ReadyzPath); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz while draining = %d, want 503", resp.StatusCode)
	}
	// The keep-alive connection of the request before the drain is still
	// open: closing idle connections at once would fail any request a client
	// is sending on one at that moment.
	var reused bool
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
	}), http.MethodPost, apiURL, strings.NewReader("{}"))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !reused || !resp.Close {
		t.Fatalf("first answer of the drain: %d, reused connection %v, Connection: close %v; want 200 on the kept-alive connection, then closed", resp.StatusCode, reused, resp.Close)
	}
	readAll(t, resp)
	for range 3 {
		resp, body := get(t, client, apiURL)
		if resp.StatusCode != http.StatusOK || body != "ok" {
			t.Fatalf("API while draining = %d", resp.StatusCode)
		}
		// Each answer closes its connection, moving keep-alive clients to
		// other replicas.
		if !resp.Close {
			t.Fatal("an answer while draining keeps its connection open (no Connection: close)")
		}
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned during the drain: %v", err)
	default:
	}

	endDrain()
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, url := range []string{apiURL, adminURL + LivezPath} {
		if _, err := client.Get(url); err == nil {
			t.Fatalf("%s still answers after Stop", url)
		}
	}
}

func TestServersStartFailsOnTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ready := NewReadiness(nil, zap.NewNop())
	for _, cfg := range []Config{
		{Addr: ln.Addr().String(), AdminAddr: "127.0.0.1:0"},
		{Addr: "127.0.0.1:0", AdminAddr: ln.Addr().String()},
	} {
		s := NewServers(cfg, http.NotFoundHandler(), http.NotFoundHandler(), ready, zap.NewNop())
		if err := s.Start(context.Background()); err == nil {
			t.Fatalf("Start on taken %+v succeeded", cfg)
		}
	}
	// When the admin address is taken, the API listener already opened is
	// closed again: its port is free for the next attempt.
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := free.Addr().String()
	free.Close()
	s := NewServers(Config{Addr: apiAddr, AdminAddr: ln.Addr().String()}, http.NotFoundHandler(), http.NotFoundHandler(), ready, zap.NewNop())
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("Start with a taken admin port succeeded")
	}
	again, err := net.Listen("tcp", apiAddr)
	if err != nil {
		t.Fatalf("the API port stayed taken after the failed start: %v", err)
	}
	again.Close()
}

// get sends a GET and reads the answer whole, so that its connection goes
// back to the client's idle pool.
func get(t *testing.T, client *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp, readAll(t, resp)
}

// brokenListener fails every Accept the way a listener does whose socket
// went away under it: not a temporary error that Serve retries.
type brokenListener struct{ net.Listener }

func (brokenListener) Accept() (net.Conn, error) { return nil, errors.New("socket closed under us") }

func TestServersReportListenerFailure(t *testing.T) {
	ready := NewReadiness(nil, zap.NewNop())
	s := NewServers(Config{}, http.NotFoundHandler(), http.NotFoundHandler(), ready, zap.NewNop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go s.serve("api", s.api, brokenListener{ln})
	select {
	case err := <-s.Failed():
		if want := "api listener: socket closed under us"; err.Error() != want {
			t.Fatalf("Failed() = %q, want %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a listener that stopped serving was not reported")
	}
}

// A listener failing while the app runs stops the app with exit code 1;
// once the app is stopping, nothing more happens.
func TestStopOnFailure(t *testing.T) {
	failed, stopping := make(chan error, 1), make(chan struct{})
	app := fxtest.New(t, fx.Invoke(func(sd fx.Shutdowner) { go stopOnFailure(failed, sd, stopping) }))
	app.RequireStart()
	failed <- errors.New("api listener: gone")
	select {
	case sig := <-app.Wait():
		if sig.ExitCode != 1 {
			t.Fatalf("shutdown with exit code %d, want 1", sig.ExitCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the app was not shut down after a listener failed")
	}
	app.RequireStop()
}
