package plants

import (
	"context"
	"maps"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The bolt metrics count a real store's commits and the writes they
// carried: three creates queued behind a stalled write share one commit.
// The bubble (testing/synctest) is what tells that the creates are queued.
func TestBoltMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, err := boltstore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewPedanticRegistry()
		if err := registerStoreMetrics(reg, boltMetrics(s)); err != nil {
			t.Fatal(err)
		}

		entered, gate, stalled := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			stalled <- s.Update(ctx, func(*bolt.Tx) error {
				close(entered)
				<-gate
				return nil
			})
		}()
		<-entered
		created := make(chan error, 3)
		for id := range int64(3) {
			go func() {
				_, err := s.Create(ctx, plant.Plant{ID: id, Name: "fern"})
				created <- err
			}()
		}
		synctest.Wait() // the three creates wait in the committer's queue
		close(gate)
		for _, ch := range []chan error{stalled, created, created, created} {
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
		// A create of a plant on disk is answered from a read: no commit.
		if res, err := s.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); err != nil || res != plant.Unchanged {
			t.Fatalf("identical re-create = %v, %v; want Unchanged", res, err)
		}

		got := gatherValues(t, reg)
		want := map[string]float64{
			"plantstore_bolt_commits_total":          2, // the stalled write's, then the three creates'
			"plantstore_bolt_writes_committed_total": 4,
		}
		if !maps.Equal(got, want) {
			t.Fatalf("metrics = %v, want %v", got, want)
		}
	})

	// Another store configured: nothing to export.
	empty := prometheus.NewPedanticRegistry()
	if err := openMemoryForMetrics(t).RegisterMetrics(empty); err != nil {
		t.Fatal(err)
	}
	if families, _ := empty.Gather(); len(families) != 0 {
		t.Fatalf("metrics without a bolt store: %d families, want none", len(families))
	}
}

// gatherValues is each family's first series' value on reg (a gauge's or
// a counter's), by name.
func gatherValues(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return got
}

// openMemoryForMetrics is the memory store as the table opens it: a store
// with no figures of its own to export.
func openMemoryForMetrics(t *testing.T) *openedStore {
	t.Helper()
	o, err := openConfigured(Config{Store: StoreMemory}, tracenoop.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}
