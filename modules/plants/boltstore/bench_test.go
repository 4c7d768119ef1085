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
			boltstore.MustStart(b, s)
			defer s.Close()
			tag := "fern"
			var next atomic.Int64
			create := func() error {
				id := next.Add(1)
				_, err := s.Create(ctx, plant.Plant{ID: id, Name: "plant-" + strconv.FormatInt(id, 10), Tag: &tag})
				return err
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
			st := s.Stats()
			b.ReportMetric(float64(st.WritesCommitted)/float64(max(st.Commits, 1)), "plants/commit")
		})
	}
}

// BenchmarkListDeep compares a page of 100 at the start of a million
// plants with one after the 900,000th: pages seek by key, so the deep page
// should cost what the first does. The tag variants page through the 10%
// of plants tagged "fern" by the tag index.
func BenchmarkListDeep(b *testing.B) {
	const total, loadBatch = 1_000_000, 50_000
	s, err := boltstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	boltstore.MustStart(b, s)
	defer s.Close()
	// Ids spread over negative and positive numbers; the i-th plant
	// (from 1) has id idOf(i).
	idOf := func(i int) int64 { return int64(i)*1000 - total*500 }
	fern := "fern"
	batch := make([]plant.Plant, 0, loadBatch)
	for i := 1; i <= total; i++ {
		p := plant.Plant{ID: idOf(i), Name: "plant-" + strconv.Itoa(i)}
		if i%10 == 0 {
			p.Tag = &fern
		}
		if batch = append(batch, p); len(batch) == loadBatch {
			if err := boltstore.Load(s, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	deep := idOf(900_000)
	for _, bc := range []struct {
		name string
		q    plant.ListQuery
	}{
		{"first-page", plant.ListQuery{Limit: 100}},
		{"after-900000th", plant.ListQuery{After: &deep, Limit: 100}},
		{"tag/first-page", plant.ListQuery{Tag: &fern, Limit: 100}},
		{"tag/after-900000th", plant.ListQuery{Tag: &fern, After: &deep, Limit: 100}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := s.List(ctx, bc.q)
				if err != nil || len(page) != 100 {
					b.Fatalf("List = %d plants, %v", len(page), err)
				}
			}
		})
	}
}

// BenchmarkCreateBatch measures the bulk import's batches: 8,192 new
// plants a transaction (one commit, two fdatasyncs), ids spread as an
// export's are.
func BenchmarkCreateBatch(b *testing.B) {
	s, err := boltstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	boltstore.MustStart(b, s)
	defer s.Close()
	const size = 8192
	ps := make([]plant.Plant, size)
	next := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		for i := range ps {
			next++
			tag := "t" + strconv.FormatInt(next%50, 10)
			ps[i] = plant.Plant{ID: next*7919 - 500_000_000, Name: "plant number " + strconv.FormatInt(next, 10), Tag: &tag}
		}
		if _, err := s.CreateBatch(ctx, ps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "plants/s")
}
