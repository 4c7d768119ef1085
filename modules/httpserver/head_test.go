package httpserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// streamForever is a GET handler whose answer lasts until its client is
// gone, as a stream of events does: it flushes its headers, then writes a
// line each time it is woken, until a write fails or its context ends.
func streamForever(wake <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
			select {
			case <-wake:
			case <-r.Context().Done():
				return
			}
		}
	})
}

// headServers runs the API listener with the router and a concurrency cap
// of 2 over a stream that never ends by itself and a plain GET.
func headServers(t *testing.T) *Servers {
	t.Helper()
	wake := make(chan struct{}) // never woken: only the end of the request ends the stream
	rt := NewRouter([]httpapi.Route{
		{Method: http.MethodGet, Path: "/stream", Handler: streamForever(wake)},
		{Method: http.MethodGet, Path: "/plain", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "plain answer")
		})},
	})
	shed, err := NewShedder(2, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ready := NewReadiness(nil, zap.NewNop())
	s := NewServers(Config{
		Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ShutdownTimeout: 10 * time.Second,
	}, rt.Resolve(shed.Wrap(rt.Dispatch())), NewAdminHandler(ready, nil), ready, zap.NewNop())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

// TestHeadOfAStreamEnds: a HEAD of a route whose GET streams until the
// client leaves answers the GET's headers and ends, so that the next
// request on the connection is answered, and it gives its request slot
// back: with a cap of 2, two HEADs that kept their connections leave the
// slots to a third client's GET.
func TestHeadOfAStreamEnds(t *testing.T) {
	s := headServers(t)
	for range 2 {
		c := dialRaw(t, s.APIAddr())
		if _, err := io.WriteString(c, "HEAD /stream HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(c.r, &http.Request{Method: http.MethodHead})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Close {
			t.Fatalf("HEAD: %d Content-Type %q close=%v; want 200 text/event-stream, connection kept", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Close)
		}
		// The same connection serves its next request (the HEAD's answer
		// had no body: nothing is left to read before it).
		if _, err := io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if status, _, body := c.answer(t); status != http.StatusOK || body != "plain answer" {
			t.Fatalf("GET after the HEAD on its connection: %d %q", status, body)
		}
	}
	c := dialRaw(t, s.APIAddr())
	if _, err := io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if status, _, body := c.answer(t); status != http.StatusOK || body != "plain answer" {
		t.Fatalf("GET from another client after two HEADs, cap 2: %d %q", status, body)
	}
}

// TestHeadAnswersTheGetsHeaders: a HEAD of a plain route has the GET's
// status and headers, its Content-Length included, and no body.
func TestHeadAnswersTheGetsHeaders(t *testing.T) {
	s := headServers(t)
	c := dialRaw(t, s.APIAddr())
	if _, err := io.WriteString(c, "HEAD /plain HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(c.r, &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len("plain answer")) {
		t.Fatalf("HEAD /plain: %d, Content-Length %d; want 200, %d", resp.StatusCode, resp.ContentLength, len("plain answer"))
	}
	if _, err := io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if status, _, body := c.answer(t); status != http.StatusOK || !strings.HasPrefix(body, "plain") {
		t.Fatalf("GET after the HEAD: %d %q", status, body)
	}
}
