package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	httpserver "github.com/plantstore/plantstore/modules/http"
)

// BenchmarkValidClientUnderBadTokenFlood measures a valid client's latency
// (one keep-alive connection, sequential creates) first alone, then while
// flooders send requests with bad tokens as fast as their connections
// allow. It reports both p99s and their ratio; the target is a ratio within
// 2. It is a measurement, not a test: latency depends on the machine.
//
//	go test -run '^$' -bench ValidClientUnderBadTokenFlood -benchtime 3000x ./cmd/plantstore
func BenchmarkValidClientUnderBadTokenFlood(b *testing.B) {
	for _, flooders := range []int{4, 16} {
		b.Run("flooders="+strconv.Itoa(flooders), func(b *testing.B) {
			api := startBenchServer(b)
			valid := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			var nextID atomic.Int64
			create := func() time.Duration {
				body := fmt.Appendf(nil, `{"id":%d,"name":"fern","tag":"bench"}`, nextID.Add(1))
				start := time.Now()
				status := post(b, valid, api, testToken, body)
				elapsed := time.Since(start)
				if status != http.StatusOK {
					b.Fatalf("valid create = %d", status)
				}
				return elapsed
			}
			for range 200 { // warm up: connections, pools, the store's first nodes
				create()
			}

			unloaded := make([]time.Duration, b.N)
			for i := range unloaded {
				unloaded[i] = create()
			}

			stop := make(chan struct{})
			var flooded atomic.Int64
			var wg sync.WaitGroup
			for range flooders {
				wg.Go(func() {
					c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
					body := []byte(`{"id":1,"name":"flood"}`)
					for {
						select {
						case <-stop:
							return
						default:
						}
						if status := post(b, c, api, "bad-token-0123456789", body); status != http.StatusUnauthorized {
							b.Errorf("flood request = %d, want 401", status)
							return
						}
						flooded.Add(1)
					}
				})
			}
			loaded := make([]time.Duration, b.N)
			start := time.Now()
			for i := range loaded {
				loaded[i] = create()
			}
			elapsed := time.Since(start)
			close(stop)
			wg.Wait()

			p99Unloaded, p99Loaded := percentile(unloaded, 0.99), percentile(loaded, 0.99)
			b.ReportMetric(float64(percentile(unloaded, 0.50).Nanoseconds()), "unloaded-p50-ns")
			b.ReportMetric(float64(p99Unloaded.Nanoseconds()), "unloaded-p99-ns")
			b.ReportMetric(float64(percentile(loaded, 0.50).Nanoseconds()), "flood-p50-ns")
			b.ReportMetric(float64(p99Loaded.Nanoseconds()), "flood-p99-ns")
			b.ReportMetric(float64(p99Loaded)/float64(p99Unloaded), "p99-ratio")
			b.ReportMetric(float64(flooded.Load())/elapsed.Seconds(), "bad-req/s")
		})
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
