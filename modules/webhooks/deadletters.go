package webhooks

import (
	"context"
	"slices"
	"time"

	"github.com/plantstore/plantstore/modules/outbox"
)

// Redeliver makes the dead letter id due again, if its endpoint is in the
// file: see outbox.Outbox's Redeliver.
func (d *Dispatcher) Redeliver(ctx context.Context, id string) error {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	return d.box.Redeliver(ctx, id, d.configured)
}

// Replay makes endpoint's delivered events committed at or after since due
// again, at most limit of them (see outbox.Outbox's Replay), if endpoint is
// in the file (else a *outbox.NotConfiguredError: pending, they would be
// dropped as a removed endpoint's events), and has its worker claim them
// at once.
func (d *Dispatcher) Replay(ctx context.Context, endpoint string, since time.Time, limit int) (int, error) {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if !slices.Contains(d.configured, endpoint) {
		return 0, &outbox.NotConfiguredError{Endpoint: endpoint}
	}
	n, err := d.box.Replay(ctx, endpoint, since, limit)
	if w := (*d.byName.Load())[endpoint]; n > 0 && w != nil {
		w.wakeUp()
	}
	return n, err
}

// Configured reports whether endpoint runs here: the file's or one made
// through the API that this replica has read.
func (d *Dispatcher) Configured(endpoint string) bool {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	return slices.Contains(d.configured, endpoint)
}

// Resend makes the message id due now, whatever its state, if its
// endpoint runs here, the file's or the API's (see outbox.Attempts' Resend), and has its
// worker claim it at once.
func (d *Dispatcher) Resend(ctx context.Context, id, endpoint string) error {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if err := d.box.Resend(ctx, id, d.configured); err != nil {
		return err
	}
	if w := (*d.byName.Load())[endpoint]; w != nil {
		w.wakeUp()
	}
	return nil
}
