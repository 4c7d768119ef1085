package plants

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Outcomes of a store call, the values of the "result" label: ok, the name
// of an answer (plant.AnswerOf: not_found, conflict, ...; cursor_gone for a
// change log's read after a pruned cursor, cursor_unknown after one of
// another history), unavailable, canceled or error.
// Answers are not failures: only unavailable and error mark the span as
// failed.
const (
	resultOK         = "ok"
	resultCursorGone = "cursor_gone"
	// resultCursorUnknown: another store's cursor, or one a restored
	// copy never wrote (changes.ErrCursorUnknown).
	resultCursorUnknown = "cursor_unknown"
	resultUnavailable   = "unavailable"
	resultCanceled      = "canceled"
	resultError         = "error"
)

// StoreMetrics is plantstore_store_operation_duration_seconds, shared by
// every instrumented store of a registry.
type StoreMetrics struct {
	duration *prometheus.HistogramVec
}

// NewStoreMetrics registers the store metrics on reg.
func NewStoreMetrics(reg prometheus.Registerer) (*StoreMetrics, error) {
	m := &StoreMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "plantstore_store_operation_duration_seconds",
		Help: "Duration of plant store calls, by store, operation and result.",
		// From an in-memory lookup to a slow database round trip.
		Buckets:                         []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  100,
		NativeHistogramMinResetDuration: time.Hour,
	}, []string{"store", "operation", "result"})}
	if err := reg.Register(m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

// Instrument wraps store so that every call is timed under the store's name
// and, inside a traced request, recorded as a child span. Calls outside a
// trace (the readiness probe's pings) start no trace of their own.
func (m *StoreMetrics) Instrument(store plant.Store, name string, tp trace.TracerProvider) plant.Store {
	op := m.ops(name, tp)
	s := &instrumentedStore{
		next:   store,
		create: op("create"), get: op("get"), list: op("list"), delete: op("delete"), ping: op("ping"),
		update: op("replace"), deleteMatching: op("delete_matching"),
	}
	if bc, ok := store.(plant.BatchCreator); ok {
		// The wrapper creates in batches only where the store does: the
		// import tells the two apart by it.
		return &instrumentedBatchStore{instrumentedStore: s, next: bc, createBatch: op("create_batch")}
	}
	return s
}

// InstrumentChanges wraps a store's change log as Instrument wraps the
// store: the feed's reads ("changes"), the listings' reads of its head
// ("changes_head") and the feed's snapshot pages ("changes_snapshot") are
// timed under the store's name and are child spans of a traced request. Wait only hands out a channel, and PruneChanges is the
// store's own pruner's call, never made through this: neither is timed.
func (m *StoreMetrics) InstrumentChanges(log changes.ChangeLog, name string, tp trace.TracerProvider) changes.ChangeLog {
	op := m.ops(name, tp)
	return &instrumentedChangeLog{next: log, changes: op("changes"), head: op("changes_head"), snapshot: op("changes_snapshot")}
}

// ops makes the instruments of the operations of the store name.
func (m *StoreMetrics) ops(name string, tp trace.TracerProvider) func(operation string) *storeOp {
	tracer := tp.Tracer("github.com/plantstore/plantstore/modules/plants")
	store := attribute.String("plantstore.store", name)
	return func(operation string) *storeOp {
		byResult := m.duration.MustCurryWith(prometheus.Labels{"store": name, "operation": operation})
		return &storeOp{
			tracer:   tracer,
			store:    store,
			span:     "store " + operation,
			ok:       byResult.WithLabelValues(resultOK), // also exports the series from the start
			byResult: byResult,
		}
	}
}

// storeOp is one store method's instruments, looked up once: its tracer,
// span name and store attribute, and its observers by result.
type storeOp struct {
	tracer   trace.Tracer
	store    attribute.KeyValue
	span     string
	ok       prometheus.Observer    // the common outcome
	byResult prometheus.ObserverVec // the others
}

type instrumentedStore struct {
	next                            plant.Store
	create, get, list, delete, ping *storeOp
	update, deleteMatching          *storeOp
}

// observe times call as a call of op and, under a traced caller, records it
// as a child span; extra is an attribute of the call (the plant id),
// ignored when it is the zero KeyValue. A method is one line around it, so
// a new Store method (or another face of a store) is instrumented by
// naming its operation. call does not escape, so the closure that calls
// the store costs no allocation; spans start only under a traced caller.
func observe[T any](ctx context.Context, op *storeOp, extra attribute.KeyValue, call func(context.Context) (T, error)) (T, error) {
	start := time.Now()
	var span trace.Span // nil when the caller is not traced
	if trace.SpanContextFromContext(ctx).IsValid() {
		attrs := trace.WithAttributes(op.store)
		if extra.Valid() {
			attrs = trace.WithAttributes(op.store, extra)
		}
		ctx, span = op.tracer.Start(ctx, op.span, internalSpan, attrs)
	}
	v, err := call(ctx)
	result := storeResult(err)
	obs := op.ok
	if result != resultOK {
		obs = op.byResult.WithLabelValues(result)
	}
	obs.Observe(time.Since(start).Seconds())
	if span != nil {
		endSpan(span, result, err)
	}
	return v, err
}

// endSpan ends a store call's span. A span without the result attribute
// succeeded: that keeps the common case cheap.
func endSpan(span trace.Span, result string, err error) {
	if result != resultOK {
		span.SetAttributes(attribute.String("plantstore.store.result", result))
	}
	if result == resultUnavailable || result == resultError {
		span.RecordError(err)
		span.SetStatus(codes.Error, result)
	}
	span.End()
}

func storeResult(err error) string {
	if err == nil {
		return resultOK
	}
	if answer := plant.AnswerOf(err); answer != "" {
		return answer
	}
	switch {
	case errors.Is(err, changes.ErrCursorGone):
		return resultCursorGone
	case errors.Is(err, changes.ErrCursorUnknown):
		return resultCursorUnknown
	case errors.Is(err, plant.ErrUnavailable):
		return resultUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return resultCanceled
	}
	return resultError
}

// internalSpan is built once: an option value costs an allocation.
var internalSpan = trace.WithSpanKind(trace.SpanKindInternal)

func idAttr(id int64) attribute.KeyValue { return attribute.Int64("plant.id", id) }

// none is the value of a call that returns only an error.
type none struct{}

func (s *instrumentedStore) Create(ctx context.Context, p plant.Plant) (plant.CreateResult, error) {
	return observe(ctx, s.create, idAttr(p.ID), func(ctx context.Context) (plant.CreateResult, error) {
		return s.next.Create(ctx, p)
	})
}

func (s *instrumentedStore) Get(ctx context.Context, id int64) (plant.Plant, error) {
	return observe(ctx, s.get, idAttr(id), func(ctx context.Context) (plant.Plant, error) {
		return s.next.Get(ctx, id)
	})
}

func (s *instrumentedStore) List(ctx context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	return observe(ctx, s.list, attribute.Int("plantstore.list.limit", q.Limit), func(ctx context.Context) ([]plant.Plant, error) {
		return s.next.List(ctx, q)
	})
}

func (s *instrumentedStore) Delete(ctx context.Context, id int64) error {
	_, err := observe(ctx, s.delete, idAttr(id), func(ctx context.Context) (none, error) {
		return none{}, s.next.Delete(ctx, id)
	})
	return err
}

func (s *instrumentedStore) Replace(ctx context.Context, p plant.Plant, match *plant.Plant) error {
	_, err := observe(ctx, s.update, idAttr(p.ID), func(ctx context.Context) (none, error) {
		return none{}, s.next.Replace(ctx, p, match)
	})
	return err
}

func (s *instrumentedStore) DeleteMatching(ctx context.Context, match plant.Plant) error {
	_, err := observe(ctx, s.deleteMatching, idAttr(match.ID), func(ctx context.Context) (none, error) {
		return none{}, s.next.DeleteMatching(ctx, match)
	})
	return err
}

func (s *instrumentedStore) Ping(ctx context.Context) error {
	_, err := observe(ctx, s.ping, attribute.KeyValue{}, func(ctx context.Context) (none, error) {
		return none{}, s.next.Ping(ctx)
	})
	return err
}

// Close is not timed: it runs once, at stop.
func (s *instrumentedStore) Close() error { return s.next.Close() }

// instrumentedBatchStore is an instrumented store that creates in batches.
type instrumentedBatchStore struct {
	*instrumentedStore
	next        plant.BatchCreator
	createBatch *storeOp
}

func (s *instrumentedBatchStore) CreateBatch(ctx context.Context, ps []plant.Plant) ([]plant.BatchResult, error) {
	return observe(ctx, s.createBatch, attribute.Int("plantstore.batch.size", len(ps)), func(ctx context.Context) ([]plant.BatchResult, error) {
		return s.next.CreateBatch(ctx, ps)
	})
}

type instrumentedChangeLog struct {
	next                    changes.ChangeLog
	changes, head, snapshot *storeOp
}

func (l *instrumentedChangeLog) Snapshot(ctx context.Context, q changes.SnapshotQuery) (changes.Snapshot, error) {
	return observe(ctx, l.snapshot, attribute.Int("plantstore.changes.limit", q.Limit), func(ctx context.Context) (changes.Snapshot, error) {
		return l.next.Snapshot(ctx, q)
	})
}

func (l *instrumentedChangeLog) Changes(ctx context.Context, after changes.Cursor, limit int) ([]changes.Record, error) {
	return observe(ctx, l.changes, attribute.Int("plantstore.changes.limit", limit), func(ctx context.Context) ([]changes.Record, error) {
		return l.next.Changes(ctx, after, limit)
	})
}

func (l *instrumentedChangeLog) Head(ctx context.Context) (changes.Cursor, error) {
	return observe(ctx, l.head, attribute.KeyValue{}, func(ctx context.Context) (changes.Cursor, error) {
		return l.next.Head(ctx)
	})
}

func (l *instrumentedChangeLog) Wait() <-chan struct{} { return l.next.Wait() }

func (l *instrumentedChangeLog) PruneChanges(ctx context.Context, before time.Time) (int, error) {
	return l.next.PruneChanges(ctx, before)
}
