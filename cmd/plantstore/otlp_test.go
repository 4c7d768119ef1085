package main

// An OTLP/HTTP trace receiver for the tests, decoding what the service's
// exporter sends with the OpenTelemetry protocol's own protobuf types, and
// helpers to send traced requests and find their spans.

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver collects the spans exported to it.
type otlpReceiver struct {
	URL string // for OTEL_EXPORTER_OTLP_ENDPOINT

	mu        sync.Mutex
	spans     []*tracepb.Span
	resources []map[string]string // the resource of each span, same index
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(rcv.serve))
	t.Cleanup(srv.Close)
	rcv.URL = srv.URL
	return rcv
}

func (rcv *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "not an OTLP traces export", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	rcv.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				rcv.spans = append(rcv.spans, s)
				rcv.resources = append(rcv.resources, res)
			}
		}
	}
	rcv.mu.Unlock()
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// trace returns the spans received so far in the trace, and their resources.
func (rcv *otlpReceiver) trace(traceID string) ([]*tracepb.Span, []map[string]string) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var spans []*tracepb.Span
	var resources []map[string]string
	for i, s := range rcv.spans {
		if hex.EncodeToString(s.GetTraceId()) == traceID {
			spans = append(spans, s)
			resources = append(resources, rcv.resources[i])
		}
	}
	return spans, resources
}

// requestSpans are the spans of one traced create: the server span and the
// store's child span.
type requestSpans struct {
	server, store *tracepb.Span
	resource      map[string]string
}

// find looks for the server span named name whose parent is the caller's
// span, and a store span that is its child.
func (rcv *otlpReceiver) find(tc traceContext, name string) (requestSpans, bool) {
	var found requestSpans
	spans, resources := rcv.trace(tc.traceID)
	for i, s := range spans {
		if s.GetName() == name && hex.EncodeToString(s.GetParentSpanId()) == tc.spanID {
			found.server, found.resource = s, resources[i]
		}
	}
	if found.server == nil {
		return found, false
	}
	for _, s := range spans {
		if strings.HasPrefix(s.GetName(), "store ") && string(s.GetParentSpanId()) == string(found.server.GetSpanId()) {
			found.store = s
		}
	}
	return found, found.store != nil
}

// traceContext is a caller's sampled span, as a traceparent header sends it.
type traceContext struct{ traceID, spanID string }

func newTraceContext(t *testing.T) traceContext {
	t.Helper()
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return traceContext{traceID: hex.EncodeToString(b[:16]), spanID: hex.EncodeToString(b[16:])}
}

func (tc traceContext) traceparent() string { return "00-" + tc.traceID + "-" + tc.spanID + "-01" }

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return m
}

// anyValue renders an attribute value as text: strings as they are, other
// kinds in Go syntax (an int as 200).
func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	}
	return v.String()
}

// wantAttributes checks that span has every attribute in want.
func wantAttributes(t *testing.T, span *tracepb.Span, want map[string]string) {
	t.Helper()
	got := attrMap(span.GetAttributes())
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", span.GetName(), k, got[k], v, got)
		}
	}
}
