package plants

import (
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The create path's pure-CPU parts: decode and validate a NewPlant, encode
// the Plant answer. Run: go test -run '^$' -bench . -benchmem ./modules/plants

var benchBody = []byte(`{"id":1234567890123,"name":"plant-1234567890123","tag":"fern"}`)

func BenchmarkDecodeNewPlant(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if _, err := decodeNewPlant(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePlant(b *testing.B) {
	p := plant.Plant{ID: 1234567890123, Name: "plant-1234567890123", Tag: plant.StringPtr("fern")}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendPlant(buf[:0], p)
	}
}
