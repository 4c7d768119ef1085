package httpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// panicky serves /panic by panicking, /half by panicking after part of its
// answer, and anything else with 200 "ok".
var panicky = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/panic":
		var ids []int
		_ = ids[len(r.URL.Path)] // an index out of range: a real bug, not a panic(string)
	case "/half":
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"name":`)
		panic("half-way")
	}
	_, _ = io.WriteString(w, "ok")
})

func newTestRecoverer(t *testing.T) (*Recoverer, *observer.ObservedLogs, *prometheus.Registry) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	rc, err := NewRecoverer(zap.New(core), reg)
	if err != nil {
		t.Fatal(err)
	}
	return rc, logs, reg
}

func TestRecoverAnswers500AndLogsStackWithTraceID(t *testing.T) {
	rc, logs, _ := newTestRecoverer(t)
	traceID := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled})
	req := httptest.NewRequestWithContext(trace.ContextWithSpanContext(context.Background(), sc), http.MethodPost, "/panic", nil)
	rec := httptest.NewRecorder()

	rc.Wrap(panicky).ServeHTTP(rec, req)

	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"error":500,"message":"internal error"}` {
		t.Fatalf("answer = %d %s, want 500 with an Error body", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	entries := logs.FilterMessage("panic in handler").All()
	if len(entries) != 1 {
		t.Fatalf("logged %d panic entries, want 1: %v", len(entries), logs.All())
	}
	fields := entries[0].ContextMap()
	if got := fields["trace_id"]; got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace_id = %v, want the request's trace id", got)
	}
	if got := fields["panic"]; !strings.Contains(got.(string), "index out of range") {
		t.Errorf("panic = %v, want the runtime error", got)
	}
	if stack, _ := fields["stack"].(string); !strings.Contains(stack, "recover_test.go") {
		t.Errorf("stack does not show the panicking handler:\n%s", stack)
	}
	if entries[0].Level != zapcore.ErrorLevel {
		t.Errorf("level = %v, want error", entries[0].Level)
	}
}

func TestRecoverWithoutTraceLogsNoTraceID(t *testing.T) {
	rc, logs, _ := newTestRecoverer(t)
	rc.Wrap(panicky).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/panic", nil))
	entries := logs.FilterMessage("panic in handler").All()
	if len(entries) != 1 {
		t.Fatalf("logged %d panic entries, want 1", len(entries))
	}
	if _, ok := entries[0].ContextMap()["trace_id"]; ok {
		t.Errorf("logged a trace_id for a request without a trace: %v", entries[0].ContextMap())
	}
}

// TestRecoverKeepsServing runs a real server: after panics, on the same
// and on new connections, the next requests are served, and every panic is
// counted in plantstore_http_panics_total.
func TestRecoverKeepsServing(t *testing.T) {
	rc, _, reg := newTestRecoverer(t)
	srv := httptest.NewServer(rc.Wrap(panicky))
	defer srv.Close()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: read body: %v", path, err)
		}
		return resp.StatusCode, string(body)
	}
	for range 3 {
		if code, body := get("/panic"); code != http.StatusInternalServerError || body != `{"error":500,"message":"internal error"}` {
			t.Fatalf("GET /panic = %d %s", code, body)
		}
		if code, body := get("/fine"); code != http.StatusOK || body != "ok" {
			t.Fatalf("GET /fine after a panic = %d %s", code, body)
		}
	}
	if got := testutil.ToFloat64(rc.panics); got != 3 {
		t.Fatalf("plantstore_http_panics_total = %v, want 3", got)
	}
	if n, err := testutil.GatherAndCount(reg, "plantstore_http_panics_total"); err != nil || n != 1 {
		t.Fatalf("plantstore_http_panics_total is not registered: %d series, %v", n, err)
	}
}

// TestRecoverAbortsAHalfWrittenAnswer: once part of an answer is out, an
// Error appended to it would make a corrupt answer (here a 200 whose body
// is half a Plant and half an Error). The connection is cut instead, so the
// client sees a failed request, never a wrong one.
func TestRecoverAbortsAHalfWrittenAnswer(t *testing.T) {
	rc, logs, _ := newTestRecoverer(t)
	srv := httptest.NewUnstartedServer(rc.Wrap(panicky))
	srv.Config.ErrorLog = zap.NewStdLog(zap.NewNop()) // net/http logs the abort; keep test output clean
	srv.Start()
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/half")
	if err == nil {
		body, readErr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if readErr == nil {
			t.Fatalf("GET /half = %d %q with no error; want a broken answer", resp.StatusCode, body)
		}
	}
	if got := testutil.ToFloat64(rc.panics); got != 1 {
		t.Fatalf("plantstore_http_panics_total = %v, want 1", got)
	}
	if n := logs.FilterMessage("panic in handler").Len(); n != 1 {
		t.Fatalf("logged %d panic entries, want 1", n)
	}
	resp, err = srv.Client().Get(srv.URL + "/fine")
	if err != nil {
		t.Fatalf("GET /fine after an aborted answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /fine after an aborted answer = %d", resp.StatusCode)
	}
}

// An interim 1xx is not the answer: a handler that sent 103 Early Hints and
// then panicked still gets the 500 Error body, not a cut connection.
func TestRecoverAnswers500AfterAnInterimStatus(t *testing.T) {
	rc, _, _ := newTestRecoverer(t)
	srv := httptest.NewServer(rc.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		panic("after the hints")
	})))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || string(body) != `{"error":500,"message":"internal error"}` {
		t.Fatalf("got %d %q, want 500 with the Error body", resp.StatusCode, body)
	}
}
