package telemetry

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// exemplarInterval is the least time between two exemplars in one bucket of
// one series. The histogram keeps only the latest exemplar of a bucket and
// Prometheus reads it once a scrape, so one a second loses nothing an
// operator can see, while an exemplar on every traced request cost nine
// allocations and about a microsecond each (a twentieth of a create).
// A rare slow request still gets its exemplar: its bucket is a quiet one.
const exemplarInterval = time.Second

// exemplarGates decides which observations carry an exemplar: per series
// (the Observer a label set resolves to) and per bucket, the time of the
// last one.
type exemplarGates struct {
	buckets []float64
	series  sync.Map // prometheus.Observer -> []atomic.Int64, unix nanoseconds
}

// due reports whether an observation of seconds on obs at now should carry
// an exemplar, and if so claims the slot.
func (g *exemplarGates) due(obs prometheus.Observer, seconds float64, now time.Time) bool {
	last, ok := g.series.Load(obs)
	if !ok {
		last, _ = g.series.LoadOrStore(obs, make([]atomic.Int64, len(g.buckets)+1))
	}
	slot := &last.([]atomic.Int64)[sort.SearchFloat64s(g.buckets, seconds)] // the last slot is +Inf
	prev, t := slot.Load(), now.UnixNano()
	return t-prev >= int64(exemplarInterval) && slot.CompareAndSwap(prev, t)
}
