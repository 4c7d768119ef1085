package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestGracefulShutdownUnderLoad sends SIGTERM to a real child process while
// 8 clients post plants over shared keep-alive connections. During the
// drain /readyz answers 503 while the API keeps answering; no request may
// fail, every plant gets its 200, and the process exits 0.
//
// Nothing is timed: the load stops once every client has had a few answers
// after readiness turned 503, which is well inside the 2 s drain.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	const (
		clients = 8
		// Answers each client needs before SIGTERM (to be sure the load runs
		// on reused connections) and after readiness turned 503.
		answersBefore, answersDuring = 20, 10
		maxRequests                  = 5000 // per client: bounds the loop whatever happens
	)
	p := startProcess(t, "PLANTSTORE_DRAIN_DELAY=2s")
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: clients},
	}
	defer client.CloseIdleConnections()

	var (
		nextID   atomic.Int64
		reused   atomic.Int64 // requests sent on a kept-alive connection
		draining atomic.Bool  // /readyz has answered 503
		answered sync.WaitGroup
		drained  sync.WaitGroup
		mu       sync.Mutex
		failures []string
		created  int
	)
	fail := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, a...))
	}
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if info.Reused {
			reused.Add(1)
		}
	}}

	answered.Add(clients)
	drained.Add(clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			before, during := 0, 0
			defer func() {
				if before < answersBefore {
					answered.Done()
				}
				if during < answersDuring {
					drained.Done()
				}
			}()
			for range maxRequests {
				wasDraining := draining.Load()
				id := nextID.Add(1)
				name := fmt.Sprintf("plant-%d", id)
				body := fmt.Sprintf(`{"id":%d,"name":%q}`, id, name)
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
					http.MethodPost, p.API+"/plants", strings.NewReader(body))
				if err != nil {
					fail("%v", err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					fail("plant %d (draining %v): %v", id, wasDraining, err)
					return
				}
				answer, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || string(answer) != fmt.Sprintf(`{"name":%q}`, name) {
					fail("plant %d (draining %v): %d %s %v", id, wasDraining, resp.StatusCode, answer, err)
					return
				}
				mu.Lock()
				created++
				mu.Unlock()

				if before++; before == answersBefore {
					answered.Done()
				}
				if wasDraining {
					if during++; during == answersDuring {
						drained.Done()
						return
					}
				}
			}
		})
	}

	answered.Wait()
	if reused.Load() == 0 {
		t.Fatal("no request reused a connection: the load is not keep-alive")
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	readyz := &http.Client{Timeout: 5 * time.Second}
	eventually(t, 10*time.Second, "/readyz answers 503 after SIGTERM", func() bool {
		resp, err := readyz.Get(p.Admin + "/readyz")
		if err != nil {
			t.Fatalf("/readyz during the drain: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			if string(body) != `{"error":503,"message":"shutting down"}` {
				t.Fatalf("/readyz 503 body = %s", body)
			}
			return true
		}
		return false
	})
	draining.Store(true)
	drained.Wait()
	wg.Wait()

	// The admin listener closes only once the drain is over: an answer now
	// shows that the load ended inside the drain.
	resp, err := readyz.Get(p.Admin + "/readyz")
	if err != nil {
		t.Fatalf("/readyz after the load: %v (the drain ended before the load did)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz after the load = %d, want 503", resp.StatusCode)
	}

	if len(failures) > 0 {
		t.Fatalf("%d of the requests failed; the first: %s\n%s", len(failures), failures[0], p.Output())
	}
	if want := int(nextID.Load()); created != want {
		t.Fatalf("%d plants created, %d requests sent", created, want)
	}
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.Output())
	}
	t.Logf("%d plants created, %d on reused connections; the load ended inside the drain", created, reused.Load())
}
