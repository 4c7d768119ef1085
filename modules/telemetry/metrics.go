package telemetry

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/internal/buildinfo"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// newRegistry returns the service's own registry (never the global one)
// with the Go and process collectors and plantstore_build_info.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	info := buildinfo.Get()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "plantstore_build_info",
			Help:        "Build information of the running binary; the value is always 1.",
			ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion},
		}, func() float64 { return 1 }),
	)
	return reg
}

// metricsRoute serves the registry on the admin listener, OpenMetrics
// enabled (exemplars need it).
func metricsRoute(reg *prometheus.Registry) []httpapi.Route {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, Registry: reg})
	return []httpapi.Route{{Method: http.MethodGet, Path: "/metrics", Handler: h}}
}

// httpMetrics are the API listener's request metrics.
type httpMetrics struct {
	duration  *prometheus.HistogramVec
	inFlight  prometheus.Gauge
	exemplars *exemplarGates
}

// durationBuckets are the classic buckets of the request duration.
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// newHTTPMetrics registers the request metrics on reg.
func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "http_server_request_duration_seconds",
			Help:                            "Duration of API requests, by method, route template and status code.",
			Buckets:                         durationBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"method", "route", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "http_server_active_requests",
			Help: "API requests being served now.",
		}),
		exemplars: &exemplarGates{buckets: durationBuckets},
	}
	for _, c := range []prometheus.Collector{m.duration, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Middleware observes each request's duration under its route template,
// never the raw path, so that clients cannot grow the series count. A
// request inside a sampled trace leaves its trace id as an exemplar (at
// most one a second per bucket: see exemplarInterval), which links a slow
// bucket to a trace that shows why.
func (m *httpMetrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		w, r, ex := captureExchange(w, r)
		served := false
		defer func() {
			if !served { // a panic on its way to the recover middleware
				ex.panicked()
			}
			m.observe(r, ex)
		}()
		next.ServeHTTP(w, r)
		served = true
	})
}

func (m *httpMetrics) observe(r *http.Request, ex *exchange) {
	obs := m.duration.WithLabelValues(methodLabel(r.Method), httpapi.RouteTemplate(r.Context()), codeLabel(ex.status))
	seconds := ex.elapsed().Seconds()
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsSampled() && m.exemplars.due(obs, seconds, time.Now()) {
		obs.(prometheus.ExemplarObserver).ObserveWithExemplar(seconds, prometheus.Labels{"trace_id": sc.TraceID().String()})
		return
	}
	obs.Observe(seconds)
}

// codeLabels holds the status code labels, so that labelling a request
// allocates nothing.
var codeLabels = func() (labels [600]string) {
	for code := range labels {
		labels[code] = strconv.Itoa(code)
	}
	return labels
}()

func codeLabel(code int) string {
	if code >= 0 && code < len(codeLabels) {
		return codeLabels[code]
	}
	return strconv.Itoa(code)
}

// methodLabel keeps the method label bounded: a client can send any token
// as a method.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}
