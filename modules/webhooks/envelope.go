package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// An envelope endpoint's body wraps the event's data (the outbox's Body)
// in what the data alone cannot say: which change it announces, when it was
// committed, and its version, by which a receiver orders a plant's changes
// and drops a stale one:
//
//	{"type":"plant.updated","timestamp":"2026-11-25T19:40:00.123Z",
//	 "data":{"id":1,"version":17,"plant":{"id":1,"name":"Rex","tag":"dog"}}}
//
// plant.deleted has no "plant". It is built at each attempt from the
// delivery, never stored, and is the same bytes on every attempt: a
// receiver may compare two deliveries of one webhook-id byte for byte.
type envelope struct {
	Type      string       `json:"type"`
	Timestamp string       `json:"timestamp"`
	Data      envelopeData `json:"data"`
}

type envelopeData struct {
	ID      int64           `json:"id"`
	Version int64           `json:"version"`
	Plant   json.RawMessage `json:"plant,omitempty"`
}

// kindOf is the change dl announces. A row written before the outbox
// recorded kinds announces a create: nothing else was announced then.
func kindOf(dl outbox.Delivery) changes.Kind {
	if dl.Kind == 0 {
		return changes.Created
	}
	return dl.Kind
}

// payload is what an attempt of dl to ep sends, and signs.
func payload(ep Endpoint, dl outbox.Delivery) ([]byte, error) {
	if ep.Format != FormatEnvelope {
		return dl.Body, nil
	}
	return envelopeOf(dl)
}

// envelopeOf wraps dl's data in its envelope.
func envelopeOf(dl outbox.Delivery) ([]byte, error) {
	kind := kindOf(dl)
	var data struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(dl.Body, &data); err != nil {
		return nil, fmt.Errorf("the event's data is not a plant's JSON: %w", err)
	}
	e := envelope{Type: kind.String(), Timestamp: dl.CreatedAt.UTC().Format(changes.TimestampLayout),
		Data: envelopeData{ID: data.ID, Version: dl.Version}}
	if kind != changes.Deleted {
		e.Data.Plant = dl.Body
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the plant as its client wrote it, as the origin body has it
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("the event's data is not a plant's JSON: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
