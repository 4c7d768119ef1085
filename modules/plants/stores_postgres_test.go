package plants

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/plants/pgstore"
)

func TestPostgresMetrics(t *testing.T) {
	pg, err := pgstore.New(pgstore.Config{URL: "postgres://nobody@127.0.0.1:1/none"}) // never connects
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	reg := prometheus.NewPedanticRegistry()
	if err := registerStoreMetrics(reg, postgresMetrics(pg)); err != nil {
		t.Fatal(err)
	}
	got := gatherValues(t, reg)
	want := map[string]float64{
		"plantstore_postgres_commits_orphaned":           0,
		"plantstore_postgres_commits_outlived_total":     0,
		"plantstore_postgres_commits_unreplicated_total": 0,
		"plantstore_postgres_change_listens_total":       0, // never started
	}
	if !maps.Equal(got, want) {
		t.Fatalf("metrics = %v, want %v", got, want)
	}

	// Another store configured: nothing to export.
	empty := prometheus.NewPedanticRegistry()
	if err := openMemoryForMetrics(t).RegisterMetrics(empty); err != nil {
		t.Fatal(err)
	}
	if families, _ := empty.Gather(); len(families) != 0 {
		t.Fatalf("metrics without a postgres store: %d families, want none", len(families))
	}
}
