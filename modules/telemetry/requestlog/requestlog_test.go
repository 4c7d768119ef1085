package requestlog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// tracker is an answer tracker that knows the request's id, as the
// telemetry module's exchange does.
type tracker struct{ id string }

func (tracker) AnswerStarted() bool { return false }
func (t tracker) RequestID() string { return t.id }

func fieldMap(fields []zap.Field) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		if f.String != "" {
			m[f.Key] = f.String
		} else if s, ok := f.Interface.(interface{ String() string }); ok {
			m[f.Key] = s.String()
		}
	}
	return m
}

func TestFields(t *testing.T) {
	traced := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
	})
	bare := httptest.NewRequest(http.MethodGet, "/plants", nil)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want map[string]string
	}{
		{"outside any chain", context.Background(), map[string]string{}},
		{"a tracker without an id yet", httpapi.WithAnswerTracker(bare, tracker{}).Context(), map[string]string{}},
		{"a request id", httpapi.WithAnswerTracker(bare, tracker{"req-1"}).Context(), map[string]string{"request_id": "req-1"}},
		{"a request id and a trace", trace.ContextWithSpanContext(httpapi.WithAnswerTracker(bare, tracker{"req-2"}).Context(), traced),
			map[string]string{"request_id": "req-2", "trace_id": traced.TraceID().String(), "span_id": traced.SpanID().String()}},
	} {
		got := fieldMap(Fields(tc.ctx))
		if len(got) != len(tc.want) {
			t.Errorf("%s: fields %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got[k], v)
			}
		}
	}
}
