package telemetry

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

func TestDurationIsObservedUnderTheRouteTemplate(t *testing.T) {
	c := newChain(t, false,
		plantsRoute(created),
		httpapi.Route{Method: http.MethodGet, Path: "/plants/{id}", Handler: created})
	c.do(http.MethodPost, "/plants", "")
	c.do(http.MethodGet, "/plants/7", "")
	c.do(http.MethodGet, "/plants/8", "")
	c.do(http.MethodDelete, "/plants/8", "")
	c.do(http.MethodGet, "/no/such/path-1", "")
	c.do("BREW", "/no/such/path-2", "")

	for _, tc := range []struct {
		labels map[string]string
		want   uint64
	}{
		{map[string]string{"method": "POST", "route": "/plants", "code": "201"}, 1},
		{map[string]string{"method": "GET", "route": "/plants/{id}", "code": "201"}, 2},
		{map[string]string{"method": "DELETE", "route": "/plants/{id}", "code": "405"}, 1},
		{map[string]string{"method": "GET", "route": "unmatched", "code": "404"}, 1},
		{map[string]string{"method": "OTHER", "route": "unmatched", "code": "404"}, 1},
	} {
		if got := histogramCount(t, c.reg, tc.labels); got != tc.want {
			t.Errorf("count%v = %d, want %d", tc.labels, got, tc.want)
		}
	}
	for _, m := range durationSeries(t, c.reg) {
		for _, l := range m.GetLabel() {
			if strings.Contains(l.GetValue(), "such") || strings.Contains(l.GetValue(), "BREW") {
				t.Errorf("a label carries what the client sent: %s=%q", l.GetName(), l.GetValue())
			}
		}
	}
}

func TestExemplarCarriesTheTraceIDOfSampledRequests(t *testing.T) {
	for _, tc := range []struct {
		name        string
		traced      bool
		traceparent string
		exemplar    bool
	}{
		{"sampled", true, sampled, true},
		{"not sampled", true, notSampled, false},
		{"tracing off", false, sampled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChain(t, tc.traced, plantsRoute(created))
			c.do(http.MethodPost, "/plants", "", "traceparent", tc.traceparent)
			var exemplars []*dto.Exemplar
			for _, m := range durationSeries(t, c.reg) {
				for _, b := range m.GetHistogram().GetBucket() {
					if e := b.GetExemplar(); e != nil {
						exemplars = append(exemplars, e)
					}
				}
				exemplars = append(exemplars, m.GetHistogram().GetExemplars()...)
			}
			if !tc.exemplar {
				if len(exemplars) != 0 {
					t.Fatalf("got exemplars %v, want none", exemplars)
				}
				return
			}
			if len(exemplars) == 0 {
				t.Fatal("no exemplar on the duration histogram")
			}
			for _, e := range exemplars {
				if len(e.GetLabel()) != 1 || e.GetLabel()[0].GetName() != "trace_id" || e.GetLabel()[0].GetValue() != callerTraceID {
					t.Errorf("exemplar labels %v, want trace_id=%s", e.GetLabel(), callerTraceID)
				}
			}
		})
	}
}

// The metrics and access-log middlewares share one capture of the answer:
// the handler's writer wraps the server's once, not once per middleware.
func TestAnswerIsCapturedOnce(t *testing.T) {
	var depth int
	c := newChain(t, false, plantsRoute(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for {
			u, ok := w.(interface{ Unwrap() http.ResponseWriter })
			if !ok {
				break
			}
			w, depth = u.Unwrap(), depth+1
		}
	})))
	c.do(http.MethodPost, "/plants", "")
	if depth != 1 {
		t.Errorf("the handler's writer is wrapped %d times, want once", depth)
	}
	if n := histogramCount(t, c.reg, map[string]string{"route": "/plants", "code": "200"}); n != 1 {
		t.Errorf("count = %d, want 1 (an answer with no explicit status is a 200)", n)
	}
	if got := c.accessLines()[0].ContextMap()["status"]; got != int64(http.StatusOK) {
		t.Errorf("access line status %v, want 200", got)
	}
}

func TestCodeLabel(t *testing.T) {
	for code, want := range map[int]string{200: "200", 404: "404", 599: "599", 600: "600", 999: "999"} {
		if got := codeLabel(code); got != want {
			t.Errorf("codeLabel(%d) = %q, want %q", code, got, want)
		}
	}
}

func durationSeries(t *testing.T, reg *prometheus.Registry) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "http_server_request_duration_seconds" {
			return mf.GetMetric()
		}
	}
	return nil
}

// histogramCount sums the request counts of the duration series whose
// labels include want.
func histogramCount(t *testing.T, reg *prometheus.Registry, want map[string]string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range durationSeries(t, reg) {
		if hasLabels(m, want) {
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return n
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	matched := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			matched++
		}
	}
	return matched == len(want)
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
