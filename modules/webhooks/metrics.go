package webhooks

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/outbox"
)

// Metrics are the webhook sender's. Their endpoint label is the endpoint's
// name from the file, so their cardinality is the file's length.
type Metrics struct {
	attempts     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	deadLettered *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	paused       *prometheus.GaugeVec
	circuitOpen  *prometheus.GaugeVec
	reloads      *prometheus.CounterVec
	outbox       *outboxCollector
}

// NewMetrics registers the webhook metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_webhook_attempts_total",
			Help: "Webhook delivery attempts by endpoint, outcome (delivered, failed, gone, timeout, error, refused) and answer's status class.",
		}, []string{"endpoint", "outcome", "status_class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "plantstore_webhook_delivery_latency_seconds",
			Help: "Time from a plant's creation to its event's successful delivery, by endpoint.",
			// From a prompt delivery to the retry schedule's last wait.
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 21600, 86400, 172800},
		}, []string{"endpoint"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_webhook_dead_lettered_total",
			Help: "Webhook events that ran out of attempts and became dead letters, by endpoint.",
		}, []string{"endpoint"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_webhook_dropped_total",
			Help: "Pending webhook events dropped because their endpoint was removed from the webhooks file, by endpoint.",
		}, []string{"endpoint"}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plantstore_webhook_endpoint_gone",
			Help: "1 while an endpoint is not sent to because it answered 410 Gone (until the webhooks file changes).",
		}, []string{"endpoint"}),
		circuitOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plantstore_webhook_endpoint_circuit_open",
			Help: "1 while this replica makes no attempts to an endpoint whose attempts kept failing, except a probe now and then.",
		}, []string{"endpoint"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_webhooks_file_reloads_total",
			Help: "Reloads of the webhooks file by result (applied, refused).",
		}, []string{"result"}),
		outbox: &outboxCollector{
			pending: prometheus.NewDesc("plantstore_webhook_pending",
				"Webhook events waiting for delivery, by endpoint (all replicas' on postgres).", []string{"endpoint"}, nil),
			dead: prometheus.NewDesc("plantstore_webhook_dead_letters",
				"Webhook dead letters kept, by endpoint.", []string{"endpoint"}, nil),
			oldest: prometheus.NewDesc("plantstore_webhook_oldest_pending_age_seconds",
				"Age of the oldest webhook event waiting for delivery, by endpoint; 0 when none waits.", []string{"endpoint"}, nil),
		},
	}
	for _, c := range []prometheus.Collector{m.attempts, m.latency, m.deadLettered, m.dropped, m.paused, m.circuitOpen, m.reloads, m.outbox} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// outboxCollector reports the outbox as last read (the dispatcher reads it
// every few seconds, not on every scrape: a scrape must not wait for the
// database).
type outboxCollector struct {
	pending, dead, oldest *prometheus.Desc

	mu    sync.Mutex
	stats map[string]outbox.Stats
	at    time.Time
}

func (c *outboxCollector) set(stats map[string]outbox.Stats, at time.Time) {
	c.mu.Lock()
	c.stats, c.at = stats, at
	c.mu.Unlock()
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.dead
	ch <- c.oldest
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ep, s := range c.stats {
		age := 0.0
		if !s.OldestPending.IsZero() {
			age = max(0, c.at.Sub(s.OldestPending).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.Pending), ep)
		ch <- prometheus.MustNewConstMetric(c.dead, prometheus.GaugeValue, float64(s.DeadLetters), ep)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age, ep)
	}
}
