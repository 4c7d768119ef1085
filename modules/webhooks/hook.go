package webhooks

import (
	"bytes"
	"context"
	"encoding/json"

	bolt "go.etcd.io/bbolt"
	"go.opentelemetry.io/otel/propagation"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/outbox"
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

// HookBolt makes every plant s creates write its event to box, for the
// endpoints subscribed at that moment, in the creating transaction.
func HookBolt(s *boltstore.Store, box *outbox.Bolt, d *Dispatcher) {
	s.OnCreate(func(ctx context.Context, tx *bolt.Tx, p plant.Plant) error {
		endpoints := d.Subscribed()
		if len(endpoints) == 0 {
			return nil
		}
		return box.WriteEvent(tx, EventOf(ctx, p), endpoints)
	})
}

// HookPostgres makes every plant s creates write its event to box, for
// the endpoints subscribed at that moment, in the statement that inserts
// it (one statement for a shared insert's plants), claimed for a handoff
// to d where it has room (see handoff.go).
func HookPostgres(s *pgstore.Store, box *outbox.Postgres, d *Dispatcher) {
	s.OnCreate(box.Hook(d.cfg.lease(), d.planRows))
}
