package plants

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/plants/memstore"
)

// BenchmarkCreateHandler runs the create handler alone (header checks, body
// read, decode, store, answer) on the memory store, re-creating one plant
// (an idempotent 200), so that allocs/op shows what the handler itself
// costs: the request and the writer are reused.
func BenchmarkCreateHandler(b *testing.B) {
	h, err := NewHandlers(memstore.New(), nil, DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	body := &reusableBody{}
	req := httptest.NewRequest(http.MethodPost, "/plants", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Body, req.ContentLength = body, int64(len(benchBody))
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		body.Reset(benchBody)
		w.status = 0
		h.create(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("create answered %d", w.status)
		}
	}
}

type reusableBody struct{ bytes.Reader }

func (*reusableBody) Close() error { return nil }

// discardWriter keeps the status and drops the body; its header map is reused.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
