package plants

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// storeOp is a Store method; its name is the "operation" label.
type storeOp int

const (
	opCreate storeOp = iota
	opGet
	opList
	opDelete
	opPing
	numOps
)

var (
	opNames     = [numOps]string{"create", "get", "list", "delete", "ping"}
	opSpanNames = [numOps]string{"store create", "store get", "store list", "store delete", "store ping"}
)

// Outcomes of a store call, the values of the "result" label. Not found and
// conflict are answers, not failures: only unavailable and error mark the
// span as failed.
const (
	resultOK          = "ok"
	resultNotFound    = "not_found"
	resultConflict    = "conflict"
	resultUnavailable = "unavailable"
	resultCanceled    = "canceled"
	resultError       = "error"
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
	s := &instrumentedStore{
		next:   store,
		tracer: tp.Tracer("github.com/plantstore/plantstore/modules/plants"),
		name:   attribute.String("plantstore.store", name),
	}
	for op := range numOps {
		labels := prometheus.Labels{"store": name, "operation": opNames[op]}
		s.byResult[op] = m.duration.MustCurryWith(labels)
		s.ok[op] = s.byResult[op].WithLabelValues(resultOK) // also exports the series from the start
	}
	return s
}

type instrumentedStore struct {
	next     plant.Store
	tracer   trace.Tracer
	name     attribute.KeyValue
	ok       [numOps]prometheus.Observer    // the common outcome, looked up once
	byResult [numOps]prometheus.ObserverVec // the others
}

// call is one store call in flight: its start, and its span when traced.
type call struct {
	s     *instrumentedStore
	op    storeOp
	start time.Time
	span  trace.Span // nil when the caller is not traced
}

// begin starts a call; extra is an attribute of the call (the plant id),
// ignored when it is the zero KeyValue. Spans start only under a traced
// caller, so an untraced call allocates nothing here.
func (s *instrumentedStore) begin(ctx context.Context, op storeOp, extra attribute.KeyValue) (context.Context, call) {
	c := call{s: s, op: op, start: time.Now()}
	if trace.SpanContextFromContext(ctx).IsValid() {
		attrs := trace.WithAttributes(s.name)
		if extra.Valid() {
			attrs = trace.WithAttributes(s.name, extra)
		}
		ctx, c.span = s.tracer.Start(ctx, opSpanNames[op], internalSpan, attrs)
	}
	return ctx, c
}

func (c call) end(err error) {
	result := storeResult(err)
	obs := c.s.ok[c.op]
	if result != resultOK {
		obs = c.s.byResult[c.op].WithLabelValues(result)
	}
	obs.Observe(time.Since(c.start).Seconds())
	if c.span == nil {
		return
	}
	// A span without the result attribute succeeded: that keeps the common
	// case cheap.
	if result != resultOK {
		c.span.SetAttributes(attribute.String("plantstore.store.result", result))
	}
	if result == resultUnavailable || result == resultError {
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, result)
	}
	c.span.End()
}

func storeResult(err error) string {
	switch {
	case err == nil:
		return resultOK
	case errors.Is(err, plant.ErrNotFound):
		return resultNotFound
	case errors.Is(err, plant.ErrConflict):
		return resultConflict
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

func (s *instrumentedStore) Create(ctx context.Context, p plant.Plant) error {
	ctx, c := s.begin(ctx, opCreate, idAttr(p.ID))
	err := s.next.Create(ctx, p)
	c.end(err)
	return err
}

func (s *instrumentedStore) Get(ctx context.Context, id int64) (plant.Plant, error) {
	ctx, c := s.begin(ctx, opGet, idAttr(id))
	p, err := s.next.Get(ctx, id)
	c.end(err)
	return p, err
}

func (s *instrumentedStore) List(ctx context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	ctx, c := s.begin(ctx, opList, attribute.Int("plantstore.list.limit", q.Limit))
	ps, err := s.next.List(ctx, q)
	c.end(err)
	return ps, err
}

func (s *instrumentedStore) Delete(ctx context.Context, id int64) error {
	ctx, c := s.begin(ctx, opDelete, idAttr(id))
	err := s.next.Delete(ctx, id)
	c.end(err)
	return err
}

func (s *instrumentedStore) Ping(ctx context.Context) error {
	ctx, c := s.begin(ctx, opPing, attribute.KeyValue{})
	err := s.next.Ping(ctx)
	c.end(err)
	return err
}

// Close is not timed: it runs once, at stop.
func (s *instrumentedStore) Close() error { return s.next.Close() }
