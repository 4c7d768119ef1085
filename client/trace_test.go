package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// injecting stands for an instrumented transport (otelhttp's): it writes
// the W3C traceparent of the request's context, which the client must have
// set to the caller's.
type injecting struct{ next http.RoundTripper }

func (t injecting) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	return t.next.RoundTrip(req)
}

func TestTraceContextReachesTheTransport(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":1,"name":"a"}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, WithHTTPClient(&http.Client{Transport: injecting{http.DefaultTransport}}))
	if err != nil {
		t.Fatal(err)
	}
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled,
	}))
	if _, err := c.Get(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if tp, want := <-got, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; tp != want {
		t.Fatalf("traceparent = %q, want %q", tp, want)
	}
}
