package console

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics registers what the sampler reads, with the production names and
// the request duration's buckets in seconds.
type metrics struct {
	reg      *prometheus.Registry
	created  prometheus.Counter
	duration *prometheus.HistogramVec
	pending  *prometheus.GaugeVec
}

func newMetrics(t *testing.T, webhooks bool) *metrics {
	t.Helper()
	m := &metrics{
		reg:     prometheus.NewRegistry(),
		created: prometheus.NewCounter(prometheus.CounterOpts{Name: createdMetric, Help: "h"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: requestDurationMetric, Help: "h",
			Buckets: []float64{.001, .01, .1, 1}}, []string{"route"}),
	}
	m.reg.MustRegister(m.created, m.duration)
	if webhooks {
		m.pending = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: pendingMetric, Help: "h"}, []string{"endpoint"})
		m.reg.MustRegister(m.pending)
	}
	return m
}

func TestSamplerRatesAndPercentiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMetrics(t, true)
		m.pending.WithLabelValues("crm").Set(3)
		m.pending.WithLabelValues("erp").Set(4)
		s := NewSampler(m.reg)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		synctest.Wait()

		first := s.Figures()
		if len(first.Samples) != 1 || first.IntervalSeconds != 5 {
			t.Fatalf("figures at start = %+v, want one sample, every 5s", first)
		}
		if sm := first.Samples[0]; sm.CreatedPerSecond != nil || sm.RequestLatency != nil || *sm.WebhookPending != 7 || sm.WebhookDead != nil {
			t.Fatalf("first sample = %+v, want no rates, pending 7, no dead letters metric", sm)
		}

		// 10 creates and 100 requests in the interval: 90 under 1 ms, 10
		// between 10 and 100 ms; a feed's long poll is left out.
		m.created.Add(10)
		for range 90 {
			m.duration.WithLabelValues("/plants").Observe(0.0005)
		}
		for range 10 {
			m.duration.WithLabelValues("/plants/{id}").Observe(0.05)
		}
		m.duration.WithLabelValues(lastingRoute).Observe(30)
		time.Sleep(SampleInterval)
		synctest.Wait()

		sm := s.Figures().Samples[1]
		if sm.CreatedPerSecond == nil || *sm.CreatedPerSecond != 2 {
			t.Fatalf("created per second = %v, want 2", sm.CreatedPerSecond)
		}
		if sm.RequestsPerSecond == nil || *sm.RequestsPerSecond != 20 {
			t.Fatalf("requests per second = %v, want 20", sm.RequestsPerSecond)
		}
		// p50: rank 50 of 90 in [0, 1ms]; p90: the 90th, at 1 ms; p99:
		// rank 99, the 9th of 10 in [10ms, 100ms].
		want := Quantiles{P50: 0.001 * 50 / 90, P90: 0.001, P99: 0.01 + 0.09*9/10}
		if got := sm.RequestLatency; got == nil || !near(got.P50, want.P50) || !near(got.P90, want.P90) || !near(got.P99, want.P99) {
			t.Fatalf("request latency = %+v, want %+v", got, want)
		}
		if sm.DeliveryLatency != nil {
			t.Fatalf("delivery latency = %+v without the metric, want null", sm.DeliveryLatency)
		}
		if got := s.Figures().Endpoints; len(got) != 2 || got[0].Name != "crm" || got[0].Pending != 3 || got[1].Name != "erp" || got[1].Pending != 4 {
			t.Fatalf("endpoints = %+v, want crm 3, erp 4", got)
		}

		// A quiet interval: rate 0, no percentile.
		time.Sleep(SampleInterval)
		synctest.Wait()
		if sm := s.Figures().Samples[2]; *sm.CreatedPerSecond != 0 || *sm.RequestsPerSecond != 0 || sm.RequestLatency != nil {
			t.Fatalf("quiet sample = %+v, want rates 0 and no latency", sm)
		}

		// The ring keeps the last Window, oldest first.
		time.Sleep(Window)
		synctest.Wait()
		all := s.Figures().Samples
		if len(all) != capacity {
			t.Fatalf("%d samples kept, want %d", len(all), capacity)
		}
		for i := 1; i < len(all); i++ {
			if got := all[i].Time.Sub(all[i-1].Time); got != SampleInterval {
				t.Fatalf("samples %d and %d are %v apart, want %v in order", i-1, i, got, SampleInterval)
			}
		}
		if got := time.Since(all[len(all)-1].Time); got != 0 {
			t.Fatalf("the newest sample is %v old, want the last tick's", got)
		}
		cancel()
		<-done
	})
}

func TestSamplerWithoutWebhooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSampler(newMetrics(t, false).reg)
		s.sample(time.Now())
		time.Sleep(SampleInterval)
		s.sample(time.Now())
		f := s.Figures()
		if sm := f.Samples[1]; sm.WebhookPending != nil || sm.WebhookDead != nil || sm.DeliveryLatency != nil || *sm.CreatedPerSecond != 0 {
			t.Fatalf("sample without webhooks = %+v, want null webhook figures", sm)
		}
		if f.Endpoints == nil || len(f.Endpoints) != 0 {
			t.Fatalf("endpoints = %#v, want an empty list", f.Endpoints)
		}
	})
}

func TestQuantileAboveTheLastBucket(t *testing.T) {
	h := &histogram{bounds: []float64{1, 2}, counts: []float64{0, 0}, total: 4}
	if got := h.quantile(0.5); got != 2 {
		t.Fatalf("quantile of observations above every bound = %v, want the last bound, 2", got)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
