package main

import (
	"encoding/hex"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// tracedCreate builds a create request that continues the caller's trace.
func tracedCreate(t *testing.T, base string, tc traceContext, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/plants", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", tc.traceparent())
	return req
}

// checkCreateSpans checks the spans of a traced create answered 200.
func checkCreateSpans(t *testing.T, got requestSpans, tc traceContext) {
	t.Helper()
	if got.server.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span kind %v, want SERVER", got.server.GetKind())
	}
	wantAttributes(t, got.server, map[string]string{
		"http.route":                "/plants",
		"http.request.method":       "POST",
		"http.response.status_code": "200",
		"url.path":                  "/plants",
	})
	if got.store.GetName() != "store create" {
		t.Errorf("store span %q, want \"store create\"", got.store.GetName())
	}
	wantAttributes(t, got.store, map[string]string{"plantstore.store": "memory", "plantstore.store.result": ""}) // set only when not ok
	if got.resource["service.name"] != "plantstore" {
		t.Errorf("resource service.name %q, want plantstore", got.resource["service.name"])
	}
	if hex.EncodeToString(got.server.GetTraceId()) != tc.traceID {
		t.Errorf("server span is not in the caller's trace")
	}
}

func TestTraceparentContinuesIntoServerAndStoreSpans(t *testing.T) {
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: export while the app runs
	s := startServer(t, testConfig(t))

	tc := newTraceContext(t)
	r := s.do(t, tracedCreate(t, s.API, tc, `{"id":1,"name":"Monstera"}`))
	if r.Status != http.StatusOK {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var got requestSpans
	eventually(t, 20*time.Second, "the server span and its store child span", func() bool {
		var ok bool
		got, ok = rcv.find(tc, "POST /plants")
		return ok
	})
	checkCreateSpans(t, got, tc)
	if got.resource["deployment.environment.name"] != "test" {
		t.Errorf("resource %v lacks OTEL_RESOURCE_ATTRIBUTES' deployment.environment.name=test", got.resource)
	}
	wantAttributes(t, got.store, map[string]string{"plant.id": "1"})
}

func TestSpansOfTheLastRequestAreExportedBeforeExit(t *testing.T) {
	rcv := startOTLPReceiver(t)
	// A schedule delay far longer than the test: the spans can only leave
	// through the flush at shutdown.
	p := startProcess(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_BSP_SCHEDULE_DELAY=600000")

	tc := newTraceContext(t)
	resp, err := http.DefaultClient.Do(tracedCreate(t, p.API, tc, `{"id":7,"name":"Fern"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	if spans, _ := rcv.trace(tc.traceID); len(spans) != 0 {
		t.Fatalf("spans exported before shutdown (%d); the test cannot tell the flush at exit", len(spans))
	}
	if code := p.Signal(t, syscall.SIGTERM, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.Output())
	}
	got, ok := rcv.find(tc, "POST /plants")
	if !ok {
		spans, _ := rcv.trace(tc.traceID)
		t.Fatalf("after exit the receiver has %d spans of the trace, want the server span and its store span\n%s", len(spans), p.Output())
	}
	checkCreateSpans(t, got, tc)
}

// On postgres, each statement is a span under the store call's span.
func TestPostgresStatementsAreSpansUnderTheStoreCall(t *testing.T) {
	cfg := postgresConfig(t)
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: export while the app runs
	s := startServer(t, cfg)

	tc := newTraceContext(t)
	if r := s.do(t, tracedCreate(t, s.API, tc, `{"id":3,"name":"Cactus"}`)); r.Status != http.StatusOK {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var got requestSpans
	var query *tracepb.Span
	eventually(t, 20*time.Second, "the store span and a PostgreSQL statement span under it", func() bool {
		var ok bool
		if got, ok = rcv.find(tc, "POST /plants"); !ok {
			return false
		}
		spans, _ := rcv.trace(tc.traceID)
		for _, sp := range spans {
			if string(sp.GetParentSpanId()) == string(got.store.GetSpanId()) && attrMap(sp.GetAttributes())["db.system.name"] == "postgresql" {
				query = sp
			}
		}
		return query != nil
	})
	wantAttributes(t, got.store, map[string]string{"plantstore.store": "postgres"})
	// A create is one statement: its plant's insert and its change log's
	// record, each a part of a WITH.
	if query.GetName() != "WITH" || query.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("statement span %q kind %v, want WITH, CLIENT", query.GetName(), query.GetKind())
	}
	text := attrMap(query.GetAttributes())["db.query.text"]
	if !strings.Contains(text, "INSERT INTO plants") || strings.Contains(text, "Cactus") {
		t.Errorf("db.query.text %q: want the statement with placeholders, never the values", text)
	}
}
