package httpserver

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/poll"
)

// TestStoppingEndsLongAnswers: an answer that lasts until the server stops
// (a stream, a long poll) watches Readiness.Stopping, which stays open
// through the drain and closes as the shutdown begins; the answer then ends
// cleanly and Stop returns without waiting out its timeout.
func TestStoppingEndsLongAnswers(t *testing.T) {
	ready := NewReadiness(nil, zap.NewNop())
	started := make(chan struct{})
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "open\n")
		http.NewResponseController(w).Flush() //nolint:errcheck // the test's server flushes
		close(started)
		select {
		case <-ready.Stopping():
			_, _ = io.WriteString(w, "stopped\n")
		case <-r.Context().Done():
		}
	})
	s := NewServers(Config{
		Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		DrainDelay: time.Hour, ShutdownTimeout: time.Hour,
	}, api, NewAdminHandler(ready, nil), ready, zap.NewNop())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.APIAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	<-started

	ctx, endDrain := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(ctx) }()
	poll.Wait(t, time.Millisecond, 10*time.Second, "Stop to start draining", func() (bool, error) { return ready.Draining(), nil })
	select {
	case <-ready.Stopping():
		t.Fatal("Stopping closed during the drain delay, while the API still serves")
	default:
	}
	endDrain()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "open\nstopped\n" {
		t.Fatalf("the long answer: %q, %v; want it ended by Stopping", body, err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
