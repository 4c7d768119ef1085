package telemetry

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestExemplarsAreRationedPerSeriesAndBucket(t *testing.T) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "d", Buckets: durationBuckets}, []string{"code"})
	ok, failed := vec.WithLabelValues("200"), vec.WithLabelValues("500")
	g := &exemplarGates{buckets: durationBuckets}
	t0 := time.Unix(1_800_000_000, 0)
	for _, step := range []struct {
		what    string
		obs     prometheus.Observer
		seconds float64
		at      time.Duration
		want    bool
	}{
		{"first in its bucket", ok, 0.0002, 0, true},
		{"same bucket at once", ok, 0.0004, time.Millisecond, false},
		{"a slower bucket", ok, 0.3, 2 * time.Millisecond, true},
		{"past the last bucket (+Inf)", ok, 60, 3 * time.Millisecond, true},
		{"+Inf again", ok, 61, 4 * time.Millisecond, false},
		{"another series, same bucket", failed, 0.0002, 5 * time.Millisecond, true},
		{"same bucket just before the interval", ok, 0.0001, exemplarInterval - time.Nanosecond, false},
		{"same bucket after the interval", ok, 0.0001, exemplarInterval, true},
	} {
		if got := g.due(step.obs, step.seconds, t0.Add(step.at)); got != step.want {
			t.Errorf("%s: due = %v, want %v", step.what, got, step.want)
		}
	}
}
