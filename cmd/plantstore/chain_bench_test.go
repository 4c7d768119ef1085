package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/fx"
)

// BenchmarkCreateChain serves POST /plants through the app's whole API
// chain (route resolution, recover, tracing, metrics, access log, auth,
// handler, instrumented memory store) without the network, with tracing off
// and on (exporting over OTLP/HTTP to a receiver that discards), so that a
// CPU profile shows what each link costs:
//
//	go test -run '^$' -bench CreateChain -cpuprofile cpu.out ./cmd/plantstore
//	go tool pprof -top cpu.out
func BenchmarkCreateChain(b *testing.B) {
	b.Run("tracing=off", func(b *testing.B) {
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		b.Setenv("OTEL_TRACES_EXPORTER", "")
		benchmarkCreate(b, benchHandler(b))
	})
	b.Run("tracing=on", func(b *testing.B) {
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		b.Cleanup(sink.Close)
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
		b.Setenv("OTEL_TRACES_EXPORTER", "")
		benchmarkCreate(b, benchHandler(b))
	})
}

// benchHandler starts the app (memory store, info logs written to
// /dev/null, a write per line as to a real stdout) and returns its API
// handler. Unlike the harness's apiHandler it starts and stops the app, so
// that the span exporter of one run is flushed and gone before the next.
func benchHandler(b *testing.B) http.Handler {
	b.Helper()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = devNull // the logger takes os.Stdout when the app is built
	defer func() { os.Stdout = stdout }()
	cfg := testConfig(b)
	cfg.Telemetry = telemetryConfig("info")
	var api http.Handler
	app := newApp(cfg, fx.NopLogger, fx.Invoke(fx.Annotate(func(h http.Handler) { api = h }, fx.ParamTags(`name:"api"`))))
	if err := app.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = app.Stop(context.Background())
		_ = devNull.Close()
	})
	return api
}

func benchmarkCreate(b *testing.B, h http.Handler) {
	var ids atomic.Int64
	b.ReportAllocs()
	// CPU time per request, every goroutine of the process included (the
	// span exporter's too): unlike ns/op, it barely moves when other
	// programs compete for the machine.
	cpuStart := processCPUTime(b)
	defer func() {
		b.ReportMetric(float64(processCPUTime(b)-cpuStart)/float64(b.N), "cpu-ns/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{header: http.Header{}}
		var body []byte
		for pb.Next() {
			id := ids.Add(1)
			body = append(body[:0], `{"id":`...)
			body = strconv.AppendInt(body, id, 10)
			body = append(body, `,"name":"plant","tag":"fern"}`...)
			r := httptest.NewRequest(http.MethodPost, "/plants", bytes.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+testToken)
			r.Header.Set("Content-Type", "application/json")
			clear(w.header)
			w.status = 0
			h.ServeHTTP(w, r)
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		}
	})
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}

// processCPUTime is the user and system CPU time the process has used.
func processCPUTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
