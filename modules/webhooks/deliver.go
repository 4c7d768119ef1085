package webhooks

import (
	"context"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/outbox"
)

// deliver makes one attempt and records its result; it reports whether
// the endpoint took the event.
func (d *Dispatcher) deliver(w *worker, dl outbox.Delivery, probe bool) bool {
	ep := *w.ep.Load()
	r := d.poster.attempt(d.base, ep, dl)
	if d.base.Err() != nil && r.status == 0 {
		r.record.Error = outbox.ErrorInterrupted
	}
	dl.Outcome = &r.record
	d.metrics.attempts.WithLabelValues(ep.Name, r.outcome, statusClass(r.status)).Inc()
	d.judge(w, ep.Name, r, probe)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.base), settleTimeout)
	defer cancel()
	log := func() *zap.Logger { // only a failure logs: no logger is built for a success
		return d.log.With(zap.String("endpoint", ep.Name), zap.String("webhook_id", dl.ID), zap.Int("attempt", dl.Attempt))
	}
	var err error
	d.health(w, ep, r)
	switch {
	case r.outcome == outcomeDelivered:
		d.metrics.latency.WithLabelValues(ep.Name).Observe(time.Since(dl.CreatedAt).Seconds())
		d.settled.later(dl)
	case d.base.Err() != nil:
		// Cut off by the stop: not the endpoint's failure. Due again at
		// once, for another replica or the next start.
		err = d.box.Retry(ctx, dl, 0, "interrupted by shutdown")
	case dl.Attempt > len(d.cfg.Retries):
		err = d.box.Bury(ctx, dl, r.reason)
		d.metrics.deadLettered.WithLabelValues(ep.Name).Inc()
		log().Warn("webhook dead-lettered after its last attempt", zap.String("outcome", r.outcome),
			zap.Int("status", r.status), zap.String("reason", r.reason))
	default:
		if r.outcome == outcomeGone && !w.gone.Swap(true) {
			d.metrics.paused.WithLabelValues(ep.Name).Set(1)
			if ep.API {
				d.disable(ep.Name, "the endpoint answered 410 Gone")
			} else {
				log().Warn("webhook endpoint answered 410 Gone: nothing more is sent to it until the webhooks file changes")
			}
		}
		wait := d.backoff(dl.Attempt, r.retryAfter)
		err = d.box.Retry(ctx, dl, wait, r.reason)
		log().Warn("webhook attempt failed", zap.String("outcome", r.outcome), zap.Int("status", r.status),
			zap.String("reason", r.reason), zap.Duration("retry_in", wait))
	}
	if err != nil {
		log().Warn("webhooks: could not record an attempt's result in the outbox; it will be attempted again", zap.Error(err))
	}
	return r.outcome == outcomeDelivered
}

// health keeps w's failing streak: an endpoint whose attempts have all
// failed for --webhooks-disable-after is paused like one that answered
// 410, and an API endpoint disabled (on every replica, until its owner
// enables it). The streak is this replica's, since its start: each
// replica judges the attempts it made.
func (d *Dispatcher) health(w *worker, ep Endpoint, r attemptResult) {
	now := time.Now()
	switch {
	case r.outcome == outcomeDelivered:
		w.failingSince.Store(0)
		return
	case d.base.Err() != nil, r.outcome == outcomeGone, d.cfg.DisableAfter <= 0:
		return
	}
	w.failingSince.CompareAndSwap(0, now.UnixNano())
	since := time.Unix(0, w.failingSince.Load())
	if now.Sub(since) < d.cfg.DisableAfter || w.gone.Swap(true) {
		return
	}
	d.metrics.paused.WithLabelValues(ep.Name).Set(1)
	reason := "every attempt failed for " + d.cfg.DisableAfter.String() + " (--webhooks-disable-after), the last: " + r.reason
	if ep.API {
		d.disable(ep.Name, reason)
		return
	}
	d.log.Warn("webhook endpoint paused: nothing more is sent to it until the webhooks file changes", zap.String("endpoint", ep.Name), zap.String("reason", reason))
}

// judge tells w's circuit how an attempt went.
func (d *Dispatcher) judge(w *worker, endpoint string, r attemptResult, probe bool) {
	switch {
	case r.outcome == outcomeDelivered:
		if w.circuit.succeeded() {
			d.metrics.circuitOpen.WithLabelValues(endpoint).Set(0)
			d.log.Info("webhook endpoint answers again: attempts resume", zap.String("endpoint", endpoint))
			w.backlog.Store(true) // what waited is due: claim it as slots free up
		}
	case d.base.Err() != nil, r.outcome == outcomeGone:
		// No verdict: cut off by the stop, or paused by its own 410.
		if probe {
			w.circuit.unused()
		}
	default:
		if wait := w.circuit.failed(probe, time.Now()); wait > 0 {
			d.metrics.circuitOpen.WithLabelValues(endpoint).Set(1)
			d.log.Warn("webhook endpoint failing: no attempts to it until a probe succeeds; its events wait in the outbox",
				zap.String("endpoint", endpoint), zap.Duration("next_probe_in", wait))
		}
	}
}

// backoff is the wait after failed attempt n (from 1): the schedule's,
// spread by ±20% so that the events of one outage do not all come back at
// once, and never shorter than the receiver's Retry-After.
func (d *Dispatcher) backoff(n int, retryAfter time.Duration) time.Duration {
	wait := d.cfg.Retries[min(n, len(d.cfg.Retries))-1]
	wait = time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64())) //nolint:gosec // jitter spreads retries; nothing to guess
	return max(wait, retryAfter)
}
