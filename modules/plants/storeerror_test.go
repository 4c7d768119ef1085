package plants_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/telemetry"
)

// A store failure answers a generic 500 or 503; the detail goes to the log
// with what finds the request again: its request id and trace id.
func TestStoreFailureIsLoggedWithTheRequestAndTraceIDs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		level   zapcore.Level
		message string
	}{
		{"failure", errors.New("disk on fire"), http.StatusInternalServerError, zapcore.ErrorLevel, "store failed"},
		{"unreachable", fmt.Errorf("dial: %w", plant.ErrUnavailable), http.StatusServiceUnavailable, zapcore.WarnLevel, "store unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			log := zap.New(core)
			h, err := plants.NewHandlers(failing{memstore.New(), tc.err}, nil, plants.DefaultMaxBodyBytes, prometheus.NewRegistry(), log)
			if err != nil {
				t.Fatal(err)
			}
			var create http.Handler
			for _, rt := range h.Routes() {
				if rt.Method == http.MethodPost && rt.Path == "/plants" {
					create = rt.Handler
				}
			}
			handler := telemetry.AccessLog(log)(create)

			tp := sdktrace.NewTracerProvider()
			ctx, span := tp.Tracer("test").Start(t.Context(), "POST /plants")
			defer span.End()
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/plants", strings.NewReader(`{"id":1,"name":"fern"}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Request-ID", "req-500")
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)

			if w.Code != tc.status || strings.Contains(w.Body.String(), "disk on fire") {
				t.Fatalf("answer %d %s; want %d with a generic message", w.Code, w.Body, tc.status)
			}
			lines := logs.FilterMessage(tc.message).AllUntimed()
			if len(lines) != 1 || lines[0].Level != tc.level {
				t.Fatalf("log lines %q: %v; want one at %v", tc.message, lines, tc.level)
			}
			fields := lines[0].ContextMap()
			want := map[string]any{
				"request_id": "req-500",
				"trace_id":   span.SpanContext().TraceID().String(),
				"span_id":    span.SpanContext().SpanID().String(),
				"error":      tc.err.Error(),
			}
			for k, v := range want {
				if fields[k] != v {
					t.Errorf("field %s = %#v, want %#v", k, fields[k], v)
				}
			}
		})
	}
}
