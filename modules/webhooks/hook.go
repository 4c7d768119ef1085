package webhooks

import (
	"bytes"
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"

	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newPlant is the event's body: the NewPlant of the origin document's
// /plant/webhook, exactly as stored (tag only when set).
type newPlant struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

// EventOf is the event announcing p, created in ctx's request.
func EventOf(ctx context.Context, p plant.Plant) outbox.Event {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)                                     // the name as the client wrote it, not \u003c for <
	_ = enc.Encode(newPlant{ID: p.ID, Name: p.Name, Tag: p.Tag}) // cannot fail: strings are valid UTF-8 (decode checked)
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return outbox.Event{Body: bytes.TrimSuffix(body.Bytes(), []byte("\n")), TraceParent: carrier["traceparent"]}
}

// Hook makes every plant store creates write its event, for the endpoints
// subscribed at that moment, in the commit that stores it; on a store that
// claims as it writes (postgres), claimed for a handoff to d where it has
// room (see handoff.go).
func Hook(store outbox.Store, d *Dispatcher) {
	store.OnChange(d.cfg.lease(), d.planRows)
}
