package pgstore

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// BenchmarkListDeepPage lists a page of 100 from one million plants: the
// first page against the page after the 900,000th id, without and with the
// tag filter, and the ten plants of a rare tag. Keyset paging seeks the
// index to the cursor, so the deep page should cost what the first one does
// and a rare tag no more than a common one.
//
//	go test -run '^$' -bench ListDeepPage ./modules/plants/pgstore
func BenchmarkListDeepPage(b *testing.B) {
	const plants, pageSize = 1_000_000, 100
	// The minute is for loading the million plants.
	s := openStore(b, Config{URL: pgtest.NewDatabase(b), StatementTimeout: time.Minute})
	// Ids 1..1,000,000; every tenth plant is a fern, every 100,000th rare,
	// the rest have no tag or another one.
	fern, other, rare := "fern", "other", "rare"
	i := 0
	n, err := s.pool.CopyFrom(ctx, pgx.Identifier{"plants"}, []string{"id", "name", "tag"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == plants {
				return nil, nil
			}
			i++
			var tag *string
			switch {
			case i%100_000 == 0:
				tag = &rare
			case i%10 == 0:
				tag = &fern
			case i%2 == 0:
				tag = &other
			}
			return []any{int64(i), "plant " + strconv.Itoa(i), tag}, nil
		}))
	if err != nil || n != plants {
		b.Fatalf("COPY: %d rows, %v", n, err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE plants"); err != nil {
		b.Fatal(err)
	}

	deep := int64(900_000)
	for _, c := range []struct {
		name      string
		q         plant.ListQuery
		wantLen   int
		wantFirst int64
	}{
		{"first", plant.ListQuery{Limit: pageSize}, pageSize, 1},
		{"after900000", plant.ListQuery{After: &deep, Limit: pageSize}, pageSize, 900_001},
		{"tag/first", plant.ListQuery{Tag: &fern, Limit: pageSize}, pageSize, 10},
		{"tag/after900000", plant.ListQuery{Tag: &fern, After: &deep, Limit: pageSize}, pageSize, 900_010},
		{"raretag/first", plant.ListQuery{Tag: &rare, Limit: pageSize}, 10, 100_000},
		{"raretag/after900000", plant.ListQuery{Tag: &rare, After: &deep, Limit: pageSize}, 1, 1_000_000},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.List(ctx, c.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(page) != c.wantLen || page[0].ID != c.wantFirst {
					b.Fatalf("page of %d, want %d from %d", len(page), c.wantLen, c.wantFirst)
				}
			}
		})
	}
}

// BenchmarkUnchanged is an identical re-create (Unchanged), one client:
// the insert that finds the id taken, then the read that tells Unchanged
// from a conflict. "durable" is the store's (the read locks the row, so
// its commit flushes WAL and waits for the standbys: see durableGetSQL);
// "plain" is the same two statements with a plain read, what the store
// did before. On one server and on a primary with a synchronous standby.
//
//	go test -run '^$' -bench Unchanged ./modules/plants/pgstore
func BenchmarkUnchanged(b *testing.B) {
	servers := map[string]func(b *testing.B) string{
		"single": func(b *testing.B) string { return pgtest.NewDatabase(b) },
		"sync": func(b *testing.B) string {
			return pgtest.NewPair(b, haDB).MultiHostURL(haDB)
		},
	}
	for _, server := range []string{"single", "sync"} {
		b.Run(server, func(b *testing.B) {
			s := openStore(b, Config{URL: servers[server](b)})
			p := plant.Plant{ID: 1, Name: "fern"}
			if _, err := s.Create(ctx, p); err != nil {
				b.Fatal(err)
			}
			b.Run("durable", func(b *testing.B) {
				for b.Loop() {
					if result, err := s.Create(ctx, p); result != plant.Unchanged || err != nil {
						b.Fatalf("Create = %v, %v", result, err)
					}
				}
			})
			b.Run("plain", func(b *testing.B) {
				for b.Loop() {
					if tag, err := s.pool.Exec(ctx, createSQL, p.ID, p.Name, p.Tag); err != nil || tag.RowsAffected() != 0 {
						b.Fatalf("insert: %v, %v", tag, err)
					}
					var stored plant.Plant
					if err := s.pool.QueryRow(ctx, getSQL, p.ID).Scan(&stored.Name, &stored.Tag); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkCreate measures creates, each committed (its WAL flushed)
// before it returns, from 1 and from 32 concurrent callers: alone, a
// create is one statement; under load, queued creates share one (see
// batch.go). Each create also logs its change (see statement.go).
//
//	go test -run '^$' -bench Create ./modules/plants/pgstore
func BenchmarkCreate(b *testing.B) {
	for _, callers := range []int{1, 32} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			s := openStore(b, Config{URL: pgtest.NewDatabase(b)})
			tag := "fern"
			var next atomic.Int64
			create := func() error {
				id := next.Add(1)
				_, err := s.Create(ctx, plant.Plant{ID: id, Name: "plant-" + strconv.FormatInt(id, 10), Tag: &tag})
				return err
			}
			if callers == 1 {
				for b.Loop() {
					if err := create(); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
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
		})
	}
}

// BenchmarkCreateBatch measures the bulk import's batches, each of
// batchSize new plants (COPY into the staging table, the set-based
// statement, the commit), ids spread as an export's are; then the same
// batches again, every plant unchanged (a resumed import).
//
//	go test -run '^$' -bench CreateBatch ./modules/plants/pgstore
func BenchmarkCreateBatch(b *testing.B) {
	const batchSize = 8192
	s := openStore(b, Config{URL: pgtest.NewDatabase(b)})
	batch := func(first int64) []plant.Plant {
		ps := make([]plant.Plant, batchSize)
		for i := range ps {
			n := first + int64(i)
			tag := "t" + strconv.FormatInt(n%50, 10)
			ps[i] = plant.Plant{ID: n*7919 - 500_000_000, Name: "plant number " + strconv.FormatInt(n, 10), Tag: &tag}
		}
		return ps
	}
	var batches int64
	for _, run := range []string{"new", "unchanged"} {
		b.Run(run, func(b *testing.B) {
			next := int64(0)
			for b.Loop() {
				if run == "new" {
					batches++
				} else if next/batchSize >= batches {
					b.Skip("fewer batches stored than asked for")
				}
				if _, err := s.CreateBatch(ctx, batch(next)); err != nil {
					b.Fatal(err)
				}
				next += batchSize
			}
			b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "plants/s")
		})
	}
}

// BenchmarkSnapshotPage times one page of 1000 plants of a snapshot
// (changes.Snapshotter), deep in a table of 100,000, with no writer: the
// page's transaction, its fence's wait and its checks. plants/s is the
// rate a snapshot reads at.
func BenchmarkSnapshotPage(b *testing.B) {
	const plants, pageSize = 100_000, 1000
	s := openStore(b, Config{URL: pgtest.NewDatabase(b), StatementTimeout: time.Minute})
	i := 0
	n, err := s.pool.CopyFrom(ctx, pgx.Identifier{"plants"}, []string{"id", "name", "tag"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == plants {
				return nil, nil
			}
			i++
			return []any{int64(i), "plant " + strconv.Itoa(i), nil}, nil
		}))
	if err != nil || n != plants {
		b.Fatalf("COPY: %d rows, %v", n, err)
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE plants"); err != nil {
		b.Fatal(err)
	}
	after := int64(50_000)
	b.ResetTimer()
	for b.Loop() {
		snap, err := s.Snapshot(ctx, changes.SnapshotQuery{After: &after, Limit: pageSize})
		if err != nil || len(snap.Plants) != pageSize {
			b.Fatalf("Snapshot: %d plants, %v", len(snap.Plants), err)
		}
	}
	b.ReportMetric(float64(b.N*pageSize)/b.Elapsed().Seconds(), "plants/s")
}
