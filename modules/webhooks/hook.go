package webhooks

import (
	"bytes"
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// newPlant is the data of plant.created and plant.updated: the NewPlant
// of the origin document's /plant/webhook, exactly as stored (tag only
// when set), which is also an origin endpoint's whole body.
type newPlant struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

// deletedPlant is the data of plant.deleted: the id alone.
type deletedPlant struct {
	ID int64 `json:"id"`
}

// EventOf is the event announcing c, made in c.Ctx's request: its data, the
// same whatever the endpoint's format (the sender wraps it for an envelope
// endpoint at each attempt, see envelope.go).
func EventOf(c changes.Change) outbox.Event {
	var data any = newPlant{ID: c.After.ID, Name: c.After.Name, Tag: c.After.Tag}
	if c.Kind == changes.Deleted {
		data = deletedPlant{ID: c.Before.ID}
	}
	ctx := c.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return outbox.Event{Body: marshal(data), TraceParent: carrier["traceparent"]}
}

// marshal is v's JSON as a client wrote its strings: "<" stays "<", not
// "\u003c". It cannot fail on the values given it: strings are valid UTF-8
// (the API's decoding checked them) and raw messages are a store's JSON.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Hook makes every change the store commits write its events, for the
// endpoints subscribed to its kind at that moment, in its commit; on a store that
// claims as it writes (postgres), claimed for a handoff to d where it has
// room (see handoff.go).
func Hook(store outbox.Store, d *Dispatcher) {
	store.OnChange(d.cfg.lease(), d)
}
