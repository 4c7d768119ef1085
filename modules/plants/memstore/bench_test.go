package memstore

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// BenchmarkCreate measures creates of distinct plants from parallel
// goroutines. Run: go test -run '^$' -bench . -benchmem -cpu 1,2 ./modules/plants/memstore
func BenchmarkCreate(b *testing.B) {
	s := New()
	tag := plant.StringPtr("fern")
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := next.Add(1)
			if _, err := s.Create(context.Background(), plant.Plant{ID: id, Name: "plant", Tag: tag}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
