package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"
	"golang.org/x/time/rate"

	httpserver "github.com/plantstore/plantstore/modules/httpserver"
)

// BenchmarkValidClientUnderBadTokenFlood measures a valid client's latency
// (one keep-alive connection, sequential creates) alone and while flooders
// send creates with bad tokens, and reports both p99s and their ratio (the
// target is within 2). It alternates the two in rounds, so that a change in
// the machine's background load hits both alike. Each flood is a number of
// keep-alive connections, either as fast as they go or paced to a total
// rate. It is a measurement, not a test: latency depends on the machine,
// and here the flooders share its CPUs with the server.
//
//	go test -run '^$' -bench ValidClientUnderBadTokenFlood -benchtime 3000x ./cmd/plantstore
func BenchmarkValidClientUnderBadTokenFlood(b *testing.B) {
	for _, flood := range []struct {
		name        string
		connections int
		perSecond   float64 // 0: as fast as the connections go
		wrk         bool    // flood with wrk, in a process of its own, instead of Go clients in this one
	}{
		{"control-no-flood", 0, 0, false}, // the ratio's noise floor on this machine
		{"go-paced-1000rps", 8, 1000, false},
		{"go-paced-3000rps", 8, 3000, false},
		{"go-paced-10000rps", 8, 10000, false},
		{"go-unpaced-4conns", 4, 0, false},
		{"go-unpaced-16conns", 16, 0, false},
		{"wrk-unpaced-4conns", 4, 0, true},
		{"wrk-unpaced-16conns", 16, 0, true},
	} {
		b.Run(flood.name, func(b *testing.B) {
			start := startFlood
			if flood.wrk {
				if _, err := exec.LookPath("wrk"); err != nil {
					b.Skip("SKIPPED, NOT MEASURED: wrk is not installed (apt-get install wrk)")
				}
				start = startWrkFlood
			}
			api := startBenchServer(b)
			valid := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			var nextID atomic.Int64
			create := func() time.Duration {
				body := fmt.Appendf(nil, `{"id":%d,"name":"fern","tag":"bench"}`, nextID.Add(1))
				start := time.Now()
				status := post(b, valid, api, testToken, body)
				elapsed := time.Since(start)
				if status != http.StatusOK {
					b.Fatalf("valid create = %d", status) // a 503 here would be starvation
				}
				return elapsed
			}
			for range 200 { // warm up: connections, pools, the store's first nodes
				create()
			}

			const rounds = 5
			perRound := max(1, b.N/rounds)
			var unloaded, loaded []time.Duration
			var flooded int64
			var floodTime time.Duration
			for range rounds {
				for range perRound {
					unloaded = append(unloaded, create())
				}
				stop := start(b, api, flood.connections, flood.perSecond)
				for range perRound {
					loaded = append(loaded, create())
				}
				n, d := stop()
				flooded, floodTime = flooded+n, floodTime+d
			}

			p99Unloaded, p99Loaded := percentile(unloaded, 0.99), percentile(loaded, 0.99)
			b.ReportMetric(float64(percentile(unloaded, 0.50).Nanoseconds()), "unloaded-p50-ns")
			b.ReportMetric(float64(p99Unloaded.Nanoseconds()), "unloaded-p99-ns")
			b.ReportMetric(float64(percentile(loaded, 0.50).Nanoseconds()), "flood-p50-ns")
			b.ReportMetric(float64(p99Loaded.Nanoseconds()), "flood-p99-ns")
			b.ReportMetric(float64(p99Loaded)/float64(p99Unloaded), "p99-ratio")
			if floodTime > 0 {
				b.ReportMetric(float64(flooded)/floodTime.Seconds(), "bad-req/s")
			}
		})
	}
}

// startFlood sends creates with a bad token on connections keep-alive
// connections, paced to perSecond in total when it is not 0, until the
// returned stop is called; stop returns how many were sent in how long.
// Each must answer 401.
func startFlood(b *testing.B, api string, connections int, perSecond float64) (stop func() (int64, time.Duration)) {
	var sent atomic.Int64
	began := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	limit := rate.NewLimiter(rate.Inf, 0)
	if perSecond > 0 {
		limit = rate.NewLimiter(rate.Limit(perSecond), 1)
	}
	var wg sync.WaitGroup
	for range connections {
		wg.Go(func() {
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			body := []byte(`{"id":1,"name":"flood"}`)
			for limit.Wait(ctx) == nil {
				if status := post(b, c, api, "bad-token-0123456789", body); status != http.StatusUnauthorized {
					b.Errorf("flood request = %d, want 401", status)
					return
				}
				sent.Add(1)
			}
		})
	}
	return func() (int64, time.Duration) {
		cancel()
		wg.Wait()
		return sent.Load(), time.Since(began)
	}
}

// startWrkFlood is startFlood with wrk (unpaced only): GETs with a bad
// token, which take the same 401 path as creates, from a process of its
// own, so that the flood's client work does not run in the benchmark's Go
// runtime. wrk runs for a fixed time and prints its totals at the end, so
// stop waits for it, and fails if it ended before stop was called.
func startWrkFlood(b *testing.B, api string, connections int, _ float64) (stop func() (int64, time.Duration)) {
	const floodTime = 4 * time.Second // far longer than a round's measurement
	var out bytes.Buffer
	cmd := exec.Command("wrk", "-t1", "-c"+strconv.Itoa(connections), "-d"+floodTime.String(),
		"-H", "Authorization: Bearer bad-token-0123456789", api+"/plants")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	time.Sleep(100 * time.Millisecond) // let its connections open
	return func() (int64, time.Duration) {
		select {
		case err := <-exited:
			b.Fatalf("wrk ended during the measurement (%v); raise floodTime\n%s", err, out.String())
		default:
		}
		if err := <-exited; err != nil {
			b.Fatalf("wrk: %v\n%s", err, out.String())
		}
		// "12345 requests in 4.00s, ..." and every one of them a 401:
		// "Non-2xx or 3xx responses: 12345".
		var requests, non2xx int64
		for _, line := range strings.Split(out.String(), "\n") {
			line = strings.TrimSpace(line)
			if n, _, ok := strings.Cut(line, " requests in "); ok {
				requests, _ = strconv.ParseInt(n, 10, 64)
			}
			if n, ok := strings.CutPrefix(line, "Non-2xx or 3xx responses: "); ok {
				non2xx, _ = strconv.ParseInt(n, 10, 64)
			}
		}
		if requests == 0 || non2xx != requests {
			b.Fatalf("wrk: %d requests, %d non-2xx; want every one refused\n%s", requests, non2xx, out.String())
		}
		return requests, floodTime
	}
}

// post sends a create and returns its status, the body read and discarded
// so that the connection is reused.
func post(b *testing.B, c *http.Client, api, token string, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, api+"/plants", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// startBenchServer runs the real app in-process, as startServer does for
// tests, and returns the API's base URL.
func startBenchServer(b *testing.B) string {
	b.Helper()
	var servers *httpserver.Servers
	app := newApp(testConfig(b), fx.Populate(&servers), fx.NopLogger)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = app.Stop(ctx)
	})
	return "http://" + servers.APIAddr().String()
}
