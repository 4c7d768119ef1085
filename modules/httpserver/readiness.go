package httpserver

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// checkTimeout bounds the readiness checks of one /readyz. A store that is
// partitioned away (packets dropped, not refused) fails its ping only by
// timing out, so this bound is how long /readyz takes to turn 503 then;
// it is well under 2 s, the time the chaos test (internal/chaos) allows
// from a partition to a 503, and under the readiness probe's timeout
// (deploy/k8s, 3 s). A healthy database answers a ping in milliseconds,
// even over a link with a few hundred milliseconds of latency.
const checkTimeout = time.Second

// Readiness answers /readyz: 503 once shutdown began or while a check (the
// store's ping) fails, 200 otherwise.
type Readiness struct {
	checks   []httpapi.ReadinessCheck
	draining atomic.Bool
	log      *zap.Logger

	stopping chan struct{} // closed by stop
	stopOnce sync.Once
}

// NewReadiness returns a Readiness over checks.
func NewReadiness(checks []httpapi.ReadinessCheck, log *zap.Logger) *Readiness {
	return &Readiness{checks: checks, log: log, stopping: make(chan struct{})}
}

// Stopping returns a channel closed when the API server begins its
// shutdown, once the drain delay has passed. The shutdown waits for every
// request in flight, so an answer that lasts as long as its client wants
// (a stream, a long poll) ends when this closes, cleanly, rather than hold
// the shutdown until its timeout and be cut off.
func (rd *Readiness) Stopping() <-chan struct{} { return rd.stopping }

// stop closes Stopping's channel; the server calls it as its shutdown
// begins (http.Server.RegisterOnShutdown).
func (rd *Readiness) stop() { rd.stopOnce.Do(func() { close(rd.stopping) }) }

// Drain turns readiness to 503 for good: the process is shutting down.
func (rd *Readiness) Drain() { rd.draining.Store(true) }

// Draining reports whether Drain was called.
func (rd *Readiness) Draining() bool { return rd.draining.Load() }

func (rd *Readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rd.Draining() {
		httperr.Write(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
	defer cancel()
	for _, c := range rd.checks {
		if err := c.Check(ctx); err != nil {
			rd.log.Warn("readiness check failed", zap.String("check", c.Name), zap.Error(err))
			httperr.Write(w, http.StatusServiceUnavailable, c.Name+" is not ready")
			return
		}
	}
	writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
