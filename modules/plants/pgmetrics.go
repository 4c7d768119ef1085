package plants

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/plants/pgstore"
)

// RegisterPostgresMetrics exports what the postgres store tells of its
// commits and replication (see docs/reliability.md, "Replication"): a
// commit its caller stopped waiting for is, with a synchronous standby,
// almost always a commit waiting for the standby; a canceled wait is a
// commit on the primary only, answered 503 as unknown. It also counts the
// change log listener's connections, whose rise is a listener losing its
// connection. A nil store (another store is configured) exports nothing.
func RegisterPostgresMetrics(reg prometheus.Registerer, pg *pgstore.Store) error {
	if pg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "plantstore_postgres_commits_orphaned",
			Help: "Statements that may commit, still running after their caller was answered 503 at its deadline: with a synchronous standby, commits waiting for it.",
		}, func() float64 { return float64(pg.Stats().OrphanedCommits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_postgres_commits_outlived_total",
			Help: "Statements that may commit and outlived their caller's deadline (the caller was answered 503; the statement was left to finish).",
		}, func() float64 { return float64(pg.Stats().OutlivedCommits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_postgres_commits_unreplicated_total",
			Help: "Commits whose wait for the synchronous standbys was canceled (the server warned: committed locally, maybe not replicated); each was answered 503 as unknown.",
		}, func() float64 { return float64(pg.Stats().UnreplicatedCommits) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "plantstore_postgres_change_listens_total",
			Help: "Connections the change log's listener made and ran LISTEN on: one at start, one more at each reconnect. While it has none, other replicas' changes reach this replica's waiting feed followers only at their next look, within a second.",
		}, func() float64 { return float64(pg.Stats().ChangeListens) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
