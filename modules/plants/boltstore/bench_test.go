package boltstore_test

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// BenchmarkCreate measures durable creates (each fsynced before it
// returns) from 1 and from 32 concurrent callers; plants/commit shows how
// many creates the group commit put in each transaction.
func BenchmarkCreate(b *testing.B) {
	for _, callers := range []int{1, 32} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			s, err := boltstore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			tag := "fern"
			var next atomic.Int64
			create := func() error {
				id := next.Add(1)
				return s.Create(ctx, plant.Plant{ID: id, Name: "plant-" + strconv.FormatInt(id, 10), Tag: &tag})
			}
			b.ReportAllocs()
			if callers == 1 {
				for b.Loop() {
					if err := create(); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				// RunParallel starts parallelism × GOMAXPROCS goroutines.
				b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := create(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.StopTimer()
			writes, commits := boltstore.CommitStats(s)
			b.ReportMetric(float64(writes)/float64(max(commits, 1)), "plants/commit")
		})
	}
}
