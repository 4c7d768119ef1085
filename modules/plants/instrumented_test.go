package plants_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/plants/storetest"
)

func TestInstrumentedStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Subject{Open: func(t *testing.T) storetest.Store {
		m, err := plants.NewStoreMetrics(prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Store{Plants: m.Instrument(memstore.New(), "memory", tracenoop.NewTracerProvider())}
	}})
}

// failing is a memory store whose Create fails with err: the way to see how
// the decorator reports failures the memory store never has.
type failing struct {
	plant.Store
	err error
}

func (f failing) Create(context.Context, plant.Plant) (plant.CreateResult, error) { return 0, f.err }

func TestStoreCallsAreTimedByResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := plants.NewStoreMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	noop := tracenoop.NewTracerProvider()
	store := m.Instrument(memstore.New(), "memory", noop)
	ctx := t.Context()

	for _, op := range []string{"create", "get", "list", "delete", "ping"} {
		if n, ok := storeCount(t, reg, "memory", op, "ok"); !ok || n != 0 {
			t.Errorf("before any call, %s/ok = %d (exported %v), want an exported 0", op, n, ok)
		}
	}
	p := plant.Plant{ID: 1, Name: "fern"}
	_, _ = store.Create(ctx, p)
	_, _ = store.Create(ctx, p)
	_, _ = store.Create(ctx, plant.Plant{ID: 1, Name: "moss"})
	_, _ = store.Get(ctx, 1)
	_, _ = store.Get(ctx, 2)
	_, _ = store.List(ctx, plant.ListQuery{Limit: 10})
	_ = store.Delete(ctx, 1)
	_ = store.Delete(ctx, 1)
	_ = store.Ping(ctx)
	unavailable := m.Instrument(failing{memstore.New(), fmt.Errorf("dial: %w", plant.ErrUnavailable)}, "postgres", noop)
	_, _ = unavailable.Create(ctx, p)
	broken := m.Instrument(failing{memstore.New(), errors.New("disk on fire")}, "bolt", noop)
	_, _ = broken.Create(ctx, p)
	canceled := m.Instrument(failing{memstore.New(), context.Canceled}, "bolt", noop)
	_, _ = canceled.Create(ctx, p)

	for _, tc := range []struct {
		store, op, result string
		want              uint64
	}{
		{"memory", "create", "ok", 2},
		{"memory", "create", "conflict", 1},
		{"memory", "get", "ok", 1},
		{"memory", "get", "not_found", 1},
		{"memory", "list", "ok", 1},
		{"memory", "delete", "ok", 1},
		{"memory", "delete", "not_found", 1},
		{"memory", "ping", "ok", 1},
		{"postgres", "create", "unavailable", 1},
		{"bolt", "create", "error", 1},
		{"bolt", "create", "canceled", 1},
	} {
		if n, _ := storeCount(t, reg, tc.store, tc.op, tc.result); n != tc.want {
			t.Errorf("%s %s %s: %d calls, want %d", tc.store, tc.op, tc.result, n, tc.want)
		}
	}
}

func TestStoreCallsAreChildSpansOfTheRequest(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m, err := plants.NewStoreMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	store := m.Instrument(memstore.New(), "memory", tp)
	broken := m.Instrument(failing{memstore.New(), fmt.Errorf("dial: %w", plant.ErrUnavailable)}, "postgres", tp)

	_ = store.Ping(t.Context()) // no request around it: no span, no trace of its own
	ctx, request := tp.Tracer("test").Start(t.Context(), "POST /plants")
	if _, err := store.Create(ctx, plant.Plant{ID: 9, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	_, _ = store.Get(ctx, 10)
	_, _ = broken.Create(ctx, plant.Plant{ID: 9, Name: "fern"})
	request.End()

	spans := rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 3 store spans and the request's", len(spans))
	}
	create, get, failed := spans[0], spans[1], spans[2]
	for _, s := range []sdktrace.ReadOnlySpan{create, get, failed} {
		if s.Parent().SpanID() != request.SpanContext().SpanID() {
			t.Errorf("span %q is not a child of the request span", s.Name())
		}
	}
	if create.Name() != "store create" || get.Name() != "store get" {
		t.Errorf("span names %q, %q; want \"store create\", \"store get\"", create.Name(), get.Name())
	}
	wantSpanAttrs(t, create, map[attribute.Key]any{"plantstore.store": "memory", "plant.id": int64(9), "plantstore.store.result": nil})
	wantSpanAttrs(t, get, map[attribute.Key]any{"plant.id": int64(10), "plantstore.store.result": "not_found"})
	if get.Status().Code == codes.Error {
		t.Error("a plant not found marks the span as failed; it is an answer, not a failure")
	}
	wantSpanAttrs(t, failed, map[attribute.Key]any{"plantstore.store": "postgres", "plantstore.store.result": "unavailable"})
	if failed.Status().Code != codes.Error || len(failed.Events()) != 1 || failed.Events()[0].Name != "exception" {
		t.Errorf("failed call: status %v, events %v; want Error and the recorded error", failed.Status(), failed.Events())
	}
}

func wantSpanAttrs(t *testing.T, span sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	got := map[attribute.Key]any{}
	for _, a := range span.Attributes() {
		got[a.Key] = a.Value.AsInterface()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %#v, want %#v", span.Name(), k, got[k], v)
		}
	}
}

// storeCount returns the number of calls observed for the labels, and
// whether the series is exported at all.
func storeCount(t *testing.T, reg *prometheus.Registry, store, op, result string) (uint64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "plantstore_store_operation_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsAre(m, map[string]string{"store": store, "operation": op, "result": result}) {
				return m.GetHistogram().GetSampleCount(), true
			}
		}
	}
	return 0, false
}

func labelsAre(m *dto.Metric, want map[string]string) bool {
	if len(m.GetLabel()) != len(want) {
		return false
	}
	for _, l := range m.GetLabel() {
		if want[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}

// The feed's reads of the change log are timed and traced as the store's
// other calls are: a page is one "changes" read, a child span of its
// request; a read after a pruned cursor is an answer (cursor_gone), not a
// failure, and so is one after another store's (cursor_unknown); a
// listing's read of the log's head is "changes_head", a snapshot's page
// "changes_snapshot".
func TestFeedReadsAreTimedAndTraced(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m, err := plants.NewStoreMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	log := m.InstrumentChanges(store, "memory", tp)
	feed := plants.NewFeed(log, nil, zap.NewNop()).Routes()[0].Handler
	h, err := plants.NewHandlers(store, log, plants.DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var list http.Handler
	for _, rt := range h.Routes() {
		if rt.Method == http.MethodGet && rt.Path == "/plants" {
			list = rt.Handler
		}
	}
	for _, op := range []string{"changes", "changes_head", "changes_snapshot"} {
		if n, ok := storeCount(t, reg, "memory", op, "ok"); !ok || n != 0 {
			t.Errorf("before any read, %s/ok = %d (exported %v), want an exported 0", op, n, ok)
		}
	}
	ctx := t.Context()
	if _, err := store.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, target string, want int) {
		t.Helper()
		ctx, request := tp.Tracer("test").Start(ctx, "GET "+target)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil))
		request.End()
		if w.Code != want {
			t.Fatalf("GET %s: %d %s, want %d", target, w.Code, w.Body, want)
		}
	}
	get(feed, "/plants/changes?limit=5", http.StatusOK)
	get(list, "/plants", http.StatusOK)
	if _, err := store.PruneChanges(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	get(feed, "/plants/changes", http.StatusGone)
	get(feed, "/plants/changes?after="+plants.EncodeCursor(changes.Cursor{History: store.History() + 1, Version: 1}), http.StatusGone)

	for _, tc := range []struct {
		op, result string
		want       uint64
	}{
		{"changes", "ok", 1},
		{"changes", "cursor_gone", 1},
		{"changes", "cursor_unknown", 1},
		{"changes_head", "ok", 1},
	} {
		if n, _ := storeCount(t, reg, "memory", tc.op, tc.result); n != tc.want {
			t.Errorf("%s %s: %d reads, want %d", tc.op, tc.result, n, tc.want)
		}
	}
	spans := rec.Ended()
	if len(spans) != 8 {
		t.Fatalf("got %d spans, want 4 reads and their 4 requests", len(spans))
	}
	for i, want := range []string{"store changes", "store changes_head", "store changes", "store changes"} {
		read, request := spans[2*i], spans[2*i+1]
		if read.Name() != want || read.Parent().SpanID() != request.SpanContext().SpanID() {
			t.Errorf("span %d: %q, child of %v; want %q, a child of %q", 2*i, read.Name(), read.Parent().SpanID(), want, request.Name())
		}
	}
	wantSpanAttrs(t, spans[0], map[attribute.Key]any{"plantstore.store": "memory", "plantstore.changes.limit": int64(5), "plantstore.store.result": nil})
	wantSpanAttrs(t, spans[4], map[attribute.Key]any{"plantstore.store": "memory", "plantstore.changes.limit": int64(100), "plantstore.store.result": "cursor_gone"})
	if spans[4].Status().Code == codes.Error {
		t.Error("a gone cursor marks the span as failed; it is an answer (410), not a failure")
	}
	wantSpanAttrs(t, spans[6], map[attribute.Key]any{"plantstore.store": "memory", "plantstore.changes.limit": int64(100), "plantstore.store.result": "cursor_unknown"})
	if spans[6].Status().Code == codes.Error {
		t.Error("another store's cursor marks the span as failed; it is an answer (410), not a failure")
	}

	// A snapshot's page is one "changes_snapshot" read (its first page
	// reads no change).
	rec = tracetest.NewSpanRecorder()
	tp.RegisterSpanProcessor(rec)
	get(feed, "/plants/changes?snapshot=true&limit=7", http.StatusOK)
	if n, _ := storeCount(t, reg, "memory", "changes_snapshot", "ok"); n != 1 {
		t.Errorf("changes_snapshot ok: %d reads, want 1", n)
	}
	if spans := rec.Ended(); len(spans) != 2 || spans[0].Name() != "store changes_snapshot" {
		t.Fatalf("a snapshot's page: spans %v; want the read (store changes_snapshot) and its request", spans)
	}
	wantSpanAttrs(t, rec.Ended()[0], map[attribute.Key]any{"plantstore.store": "memory", "plantstore.changes.limit": int64(7), "plantstore.store.result": nil})
}
