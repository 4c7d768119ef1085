package telemetry

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

func TestTracingEnabledFollowsTheOTELVariables(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"exporter console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false},
		{"sdk not disabled", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"only the protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tracingEnabled(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("tracingEnabled = %v, want %v", got, tc.want)
			}
		})
	}
}

func clearOTELEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
}

func TestTracingOffIsFree(t *testing.T) {
	clearOTELEnv(t)
	tr, err := buildTracing(t.Context(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Fatal("tracing is on with no OTEL variable set")
	}
	next := &countingHandler{}
	if h := tr.Middleware(next); h != http.Handler(next) {
		t.Error("with tracing off the middleware wraps the handler; want the handler itself")
	}
	if _, span := tr.TracerProvider().Tracer("t").Start(t.Context(), "s"); span.IsRecording() {
		t.Error("with tracing off a span records")
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

type countingHandler struct{ n int }

func (h *countingHandler) ServeHTTP(http.ResponseWriter, *http.Request) { h.n++ }

func TestNewTracingRefusesWhatItCannotHonour(t *testing.T) {
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"protocol", "OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon", `OTLP protocol "carrier-pigeon": want http/protobuf`},
		{"traces protocol", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", `OTLP protocol "http/json": want http/protobuf`},
		{"grpc", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", `OTLP protocol grpc is not built in: use http/protobuf, the default (collectors take it on port 4318)`},
		{"exporter", "OTEL_TRACES_EXPORTER", "zipkin", `OTEL_TRACES_EXPORTER "zipkin": want otlp or none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTELEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(tc.key, tc.value)
			_, err := buildTracing(t.Context(), zap.NewNop())
			if err == nil || err.Error() != "tracing: "+tc.want {
				t.Fatalf("buildTracing with %s=%s: err %v, want %q", tc.key, tc.value, err, "tracing: "+tc.want)
			}
		})
	}
}

func TestNewTracingBuildsTheConfiguredExporter(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", ""} {
		t.Run(protocol, func(t *testing.T) {
			clearOTELEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_SERVICE_NAME", "plantstore-test")
			tr, err := buildTracing(t.Context(), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			if !tr.Enabled() {
				t.Fatal("tracing is off with an OTLP endpoint set")
			}
			_, span := tr.TracerProvider().Tracer("t").Start(t.Context(), "s")
			ro := span.(sdktrace.ReadOnlySpan)
			if got := serviceName(ro.Resource()); got != "plantstore-test" {
				t.Errorf("service.name %q, want OTEL_SERVICE_NAME's plantstore-test", got)
			}
			// The span is not ended, so nothing is exported to the endpoint,
			// where nothing listens.
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
}

func TestServerSpanIsNamedAfterTheRoute(t *testing.T) {
	var inHandler trace.SpanContext
	var bag string
	c := newChain(t, true,
		plantsRoute(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inHandler = trace.SpanContextFromContext(r.Context())
			bag = baggage.FromContext(r.Context()).Member("tenant").Value()
			w.WriteHeader(http.StatusCreated)
		})),
		httpapi.Route{Method: http.MethodGet, Path: "/plants/{id}", Handler: created},
		httpapi.Route{Method: http.MethodGet, Path: "/boom", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		})},
	)
	c.do(http.MethodPost, "/plants", "{}", "traceparent", sampled, "baggage", "tenant=acme")
	c.do(http.MethodGet, "/plants/12", "")
	c.do(http.MethodGet, "/not/a/route", "")
	c.do(http.MethodGet, "/boom", "")

	spans := c.spans.Ended()
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4", len(spans))
	}
	post, get, unmatched, boom := spans[0], spans[1], spans[2], spans[3]

	if post.Name() != "POST /plants" || post.SpanKind() != trace.SpanKindServer {
		t.Errorf("span %q kind %v, want \"POST /plants\" server", post.Name(), post.SpanKind())
	}
	if got := post.SpanContext().TraceID().String(); got != callerTraceID {
		t.Errorf("trace id %s, want the caller's %s", got, callerTraceID)
	}
	if got := post.Parent().SpanID().String(); got != callerSpanID || !post.Parent().IsRemote() {
		t.Errorf("parent %s (remote %v), want the caller's %s", got, post.Parent().IsRemote(), callerSpanID)
	}
	if inHandler.SpanID() != post.SpanContext().SpanID() {
		t.Error("the handler's context does not carry the server span")
	}
	if bag != "acme" {
		t.Errorf("baggage tenant = %q in the handler, want acme", bag)
	}
	wantAttrs(t, post, map[attribute.Key]any{
		"http.route":                "/plants",
		"http.request.method":       "POST",
		"http.response.status_code": int64(http.StatusCreated),
		"url.path":                  "/plants",
		"url.scheme":                "http",
		"network.protocol.version":  "1.1",
	})

	if get.Name() != "GET /plants/{id}" {
		t.Errorf("span %q, want \"GET /plants/{id}\"", get.Name())
	}
	wantAttrs(t, get, map[attribute.Key]any{"http.route": "/plants/{id}"})
	if get.Parent().IsValid() {
		t.Error("a request without traceparent has a parent span")
	}

	if unmatched.Name() != "GET" {
		t.Errorf("span of an unmatched path is %q, want the method alone", unmatched.Name())
	}
	for _, a := range unmatched.Attributes() {
		if a.Key == "http.route" {
			t.Errorf("unmatched path has http.route %q", a.Value.String())
		}
	}
	if boom.Status().Code != codes.Error {
		t.Errorf("a 500 has span status %v, want Error", boom.Status().Code)
	}
	wantAttrs(t, boom, map[attribute.Key]any{"http.response.status_code": int64(500), "error.type": "500"})
}

func wantAttrs(t *testing.T, span sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	got := map[attribute.Key]any{}
	for _, a := range span.Attributes() {
		got[a.Key] = a.Value.AsInterface()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %#v, want %#v", span.Name(), k, got[k], v)
		}
	}
}
