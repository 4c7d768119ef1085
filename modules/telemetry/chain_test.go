package telemetry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// Trace context of a caller, as a W3C traceparent header carries it.
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
	sampled       = "00-" + callerTraceID + "-" + callerSpanID + "-01"
	notSampled    = "00-" + callerTraceID + "-" + callerSpanID + "-00"
)

// chain is the API listener's chain as httpserver assembles it, with this
// package's middlewares, an auth and a rate limit that let everything
// through, and recorders for what the middlewares report.
type chain struct {
	handler http.Handler
	reg     *prometheus.Registry
	logs    *observer.ObservedLogs
	spans   *tracetest.SpanRecorder // nil when tracing is off
}

// newChain serves routes (method, template, handler) behind the chain; with
// traced, spans are recorded in memory.
func newChain(t *testing.T, traced bool, routes ...httpapi.Route) *chain {
	t.Helper()
	c := &chain{reg: prometheus.NewRegistry()}
	core, logs := observer.New(zapcore.InfoLevel)
	c.logs = logs
	log := zap.New(core)

	metrics, err := newHTTPMetrics(c.reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "none") // whatever the environment running the tests says
	tracing, err := buildTracing(t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	if traced {
		c.spans = tracetest.NewSpanRecorder()
		tracing.use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c.spans)))
	}
	router := httpserver.NewRouter(routes)
	rec, err := httpserver.NewRecoverer(log, c.reg)
	if err != nil {
		t.Fatal(err)
	}
	shed, err := httpserver.NewShedder(64, c.reg)
	if err != nil {
		t.Fatal(err)
	}
	pass := func(next http.Handler) http.Handler { return next }
	c.handler = httpserver.NewAPIHandler(router, httpserver.MiddlewaresParams{
		Tracing:   tracing.Middleware,
		Metrics:   metrics.Middleware,
		AccessLog: AccessLog(log),
		Auth:      pass,
		RateLimit: pass,
		Scope:     pass,
	}, rec, shed)
	return c
}

// do serves one request with headers given as name, value pairs.
func (c *chain) do(method, target, body string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	c.handler.ServeHTTP(w, r)
	return w
}

// accessLines are the access-log entries written so far.
func (c *chain) accessLines() []observer.LoggedEntry {
	return c.logs.FilterLoggerName("access").AllUntimed()
}

// created answers 201 with a five-byte body.
var created = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte("hello"))
})

func plantsRoute(h http.Handler) httpapi.Route {
	return httpapi.Route{Method: http.MethodPost, Path: "/plants", Handler: h}
}
