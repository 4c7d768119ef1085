package plants

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
)

// RegisterBoltMetrics exports what the bolt store tells of its group
// commit (boltstore.Stats): the ratio of the two counters' rates is the
// writes each commit carried, the group commit's batch size, 1 for
// writers one at a time and growing with concurrent ones. A nil store
// (another store is configured) exports nothing.
func RegisterBoltMetrics(reg prometheus.Registerer, store *boltstore.Store) error {
	if store == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_bolt_commits_total",
			Help: "Transactions the bolt store's group commit made durable (two fdatasyncs each).",
		}, func() float64 { return float64(store.Stats().Commits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_bolt_writes_committed_total",
			Help: "Writes those transactions carried; divided by plantstore_bolt_commits_total, the writes per commit (the group commit's batch size).",
		}, func() float64 { return float64(store.Stats().WritesCommitted) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
