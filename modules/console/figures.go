package console

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The figures are sampled every SampleInterval and the last Window of them
// kept, so that the console plots the last minutes with nothing else
// running (no Prometheus): a ring of 120 samples, a few KB.
const (
	SampleInterval = 5 * time.Second
	Window         = 10 * time.Minute
)

// The metrics the figures read, by name. A metric that is not registered
// (no webhooks configured) gives null figures, not zeros.
const (
	createdMetric         = "plantstore_plants_created_total"
	requestDurationMetric = "http_server_request_duration_seconds"
	deliveryLatencyMetric = "plantstore_webhook_delivery_latency_seconds"
	pendingMetric         = "plantstore_webhook_pending"
	deadLettersMetric     = "plantstore_webhook_dead_letters"
	oldestPendingMetric   = "plantstore_webhook_oldest_pending_age_seconds"
	circuitOpenMetric     = "plantstore_webhook_endpoint_circuit_open"
	goneMetric            = "plantstore_webhook_endpoint_gone"
	attemptsMetric        = "plantstore_webhook_attempts_total"
)

// lastingRoute is left out of the request latency: a change feed's long
// poll or stream lasts as long as it waits, which is not the service's
// latency.
const lastingRoute = "/plants/changes"

// Quantiles are the percentiles a latency figure gives.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Sample is the figures of one interval: rates and percentiles over the
// interval that ends at Time, gauges as read at Time. A figure is nil when
// it cannot be told: the first sample has no interval, a percentile needs
// an observation in the interval, a webhook figure needs webhooks.
type Sample struct {
	Time              time.Time  `json:"time"`
	CreatedPerSecond  *float64   `json:"created_per_second"`
	RequestsPerSecond *float64   `json:"requests_per_second"`
	RequestLatency    *Quantiles `json:"request_latency_seconds"`
	DeliveryLatency   *Quantiles `json:"delivery_latency_seconds"`
	WebhookPending    *float64   `json:"webhook_pending"`
	WebhookDead       *float64   `json:"webhook_dead_letters"`
}

// Endpoint is one webhook endpoint as the last sample read it.
type Endpoint struct {
	Name                    string             `json:"name"`
	Pending                 float64            `json:"pending"`
	DeadLetters             float64            `json:"dead_letters"`
	OldestPendingAgeSeconds float64            `json:"oldest_pending_age_seconds"`
	CircuitOpen             bool               `json:"circuit_open"`
	Gone                    bool               `json:"gone"`
	Attempts                map[string]float64 `json:"attempts"` // by outcome, since the start
}

// Figures is the answer of the figures route: the samples oldest first.
type Figures struct {
	IntervalSeconds float64    `json:"interval_seconds"`
	Samples         []Sample   `json:"samples"`
	Endpoints       []Endpoint `json:"endpoints"`
}

// reading is what one gathering holds: the counters and histograms as
// totals since the start, for the next interval's differences.
type reading struct {
	at        time.Time
	created   *float64
	requests  *histogram
	delivered *histogram
}

// histogram is a classic histogram summed over its series: cumulative
// counts by upper bound.
type histogram struct {
	bounds []float64
	counts []float64
	total  float64
}

// Sampler gathers the registry every SampleInterval into a ring of the
// last Window of samples. It reads the registry only, so the paths that
// update the metrics (a create) pay nothing for it.
type Sampler struct {
	gatherer prometheus.Gatherer

	mu        sync.Mutex
	last      *reading
	samples   []Sample // a ring of capacity; next is the oldest once full
	next      int
	endpoints []Endpoint
}

const capacity = int(Window / SampleInterval)

// NewSampler returns a sampler of g; Run samples.
func NewSampler(g prometheus.Gatherer) *Sampler {
	return &Sampler{gatherer: g, samples: make([]Sample, 0, capacity), endpoints: []Endpoint{}}
}

// Run samples at once and then every SampleInterval until ctx ends.
func (s *Sampler) Run(ctx context.Context) {
	s.sample(time.Now())
	tick := time.NewTicker(SampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.sample(now)
		}
	}
}

// Figures returns the samples kept, oldest first, and the endpoints as last
// read.
func (s *Sampler) Figures() Figures {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sample, 0, len(s.samples))
	out = append(out, s.samples[s.next:]...)
	out = append(out, s.samples[:s.next]...)
	return Figures{IntervalSeconds: SampleInterval.Seconds(), Samples: out, Endpoints: slices.Clone(s.endpoints)}
}

func (s *Sampler) sample(now time.Time) {
	families, _ := s.gatherer.Gather() // a collector's error leaves the rest: plot what was read
	byName := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		byName[f.GetName()] = f
	}
	cur := &reading{
		at:        now,
		created:   sum(byName[createdMetric]),
		requests:  sumHistogram(byName[requestDurationMetric], func(m *dto.Metric) bool { return label(m, "route") != lastingRoute }),
		delivered: sumHistogram(byName[deliveryLatencyMetric], nil),
	}
	sm := Sample{Time: now.UTC(), WebhookPending: sum(byName[pendingMetric]), WebhookDead: sum(byName[deadLettersMetric])}

	s.mu.Lock()
	defer s.mu.Unlock()
	if prev := s.last; prev != nil {
		seconds := now.Sub(prev.at).Seconds()
		if seconds > 0 {
			sm.CreatedPerSecond = rate(prev.created, cur.created, seconds)
			if d := cur.requests.minus(prev.requests); d != nil {
				r := d.total / seconds
				sm.RequestsPerSecond = &r
				sm.RequestLatency = d.quantiles()
			}
			sm.DeliveryLatency = cur.delivered.minus(prev.delivered).quantiles()
		}
	}
	s.last = cur
	if len(s.samples) < capacity {
		s.samples = append(s.samples, sm)
	} else {
		s.samples[s.next] = sm
		s.next = (s.next + 1) % capacity
	}
	s.endpoints = endpointsOf(byName)
}

// sum is the sum of a counter's or gauge's series, nil for a metric not
// registered.
func sum(f *dto.MetricFamily) *float64 {
	if f == nil {
		return nil
	}
	var total float64
	for _, m := range f.GetMetric() {
		total += value(m)
	}
	return &total
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// rate is the counter's increase per second; nil without both readings or
// after a reset (a counter never goes down otherwise).
func rate(prev, cur *float64, seconds float64) *float64 {
	if prev == nil || cur == nil || *cur < *prev {
		return nil
	}
	r := (*cur - *prev) / seconds
	return &r
}

// sumHistogram adds up the series of a histogram that keep passes (nil:
// all). A histogram vector without series is not gathered at all, so a
// missing family is an empty histogram: nothing observed yet.
func sumHistogram(f *dto.MetricFamily, keep func(*dto.Metric) bool) *histogram {
	h := &histogram{}
	if f == nil {
		return h
	}
	for _, m := range f.GetMetric() {
		if m.Histogram == nil || (keep != nil && !keep(m)) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			i, found := slices.BinarySearch(h.bounds, b.GetUpperBound())
			if !found {
				h.bounds = slices.Insert(h.bounds, i, b.GetUpperBound())
				h.counts = slices.Insert(h.counts, i, 0)
			}
			h.counts[i] += float64(b.GetCumulativeCount())
		}
		h.total += float64(m.GetHistogram().GetSampleCount())
	}
	return h
}

// minus is the histogram of the observations made since prev, nil when
// either is missing or they do not line up (a series reset).
func (h *histogram) minus(prev *histogram) *histogram {
	if h == nil || prev == nil {
		return nil
	}
	d := &histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), total: h.total - prev.total}
	for i, bound := range h.bounds {
		j, found := slices.BinarySearch(prev.bounds, bound)
		var before float64
		if found {
			before = prev.counts[j]
		}
		d.counts[i] = h.counts[i] - before
		if d.counts[i] < 0 {
			return nil
		}
	}
	if d.total < 0 {
		return nil
	}
	return d
}

// quantiles are the 50th, 90th and 99th percentiles, nil without an
// observation.
func (h *histogram) quantiles() *Quantiles {
	if h == nil || h.total <= 0 {
		return nil
	}
	return &Quantiles{P50: h.quantile(0.5), P90: h.quantile(0.9), P99: h.quantile(0.99)}
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: linearly within the bucket it falls in, the lowest bucket starting
// at 0, and the highest finite bound for one past the last bucket.
func (h *histogram) quantile(q float64) float64 {
	rank := q * h.total
	lower, below := 0.0, 0.0
	for i, bound := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(bound, 1) {
				return lower
			}
			inBucket := h.counts[i] - below
			if inBucket <= 0 {
				return bound
			}
			return lower + (bound-lower)*(rank-below)/inBucket
		}
		lower, below = bound, h.counts[i]
	}
	return lower // observations above the last finite bound
}

// endpointsOf reads each webhook endpoint's figures, sorted by name.
func endpointsOf(byName map[string]*dto.MetricFamily) []Endpoint {
	eps := map[string]*Endpoint{}
	at := func(m *dto.Metric) *Endpoint {
		name := label(m, "endpoint")
		ep, ok := eps[name]
		if !ok {
			ep = &Endpoint{Name: name, Attempts: map[string]float64{}}
			eps[name] = ep
		}
		return ep
	}
	each := func(metric string, f func(*Endpoint, *dto.Metric)) {
		if fam := byName[metric]; fam != nil {
			for _, m := range fam.GetMetric() {
				f(at(m), m)
			}
		}
	}
	each(pendingMetric, func(ep *Endpoint, m *dto.Metric) { ep.Pending = value(m) })
	each(deadLettersMetric, func(ep *Endpoint, m *dto.Metric) { ep.DeadLetters = value(m) })
	each(oldestPendingMetric, func(ep *Endpoint, m *dto.Metric) { ep.OldestPendingAgeSeconds = value(m) })
	each(circuitOpenMetric, func(ep *Endpoint, m *dto.Metric) { ep.CircuitOpen = value(m) > 0 })
	each(goneMetric, func(ep *Endpoint, m *dto.Metric) { ep.Gone = value(m) > 0 })
	each(attemptsMetric, func(ep *Endpoint, m *dto.Metric) { ep.Attempts[label(m, "outcome")] += value(m) })
	out := make([]Endpoint, 0, len(eps))
	for _, ep := range eps {
		out = append(out, *ep)
	}
	slices.SortFunc(out, func(a, b Endpoint) int { return strings.Compare(a.Name, b.Name) })
	return out
}
