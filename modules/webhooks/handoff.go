package webhooks

import (
	"context"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// Handoffs: on postgres a create writes an endpoint's row already claimed
// by this replica when that endpoint's worker has room for it, and hands
// the delivery to the worker once the insert has committed. The usual event
// then costs the database its insert and its batched removal, and no claim
// (an UPDATE, a row version and a commit per few events); it is attempted
// at once rather than at the next poll. Room is the endpoint's concurrency,
// so a handed-off delivery waits for about one attempt before its own,
// well within the lease. Without room (a slow endpoint, a backlog) or
// while its circuit is open (circuit.go), rows are written due, for the
// claims. A handoff lost to a crash is an
// ordinary lease running out: the row falls due again by itself.

// reserve takes room for one handoff to endpoint and returns its worker,
// or nil when it has none: the row is then written due, not claimed.
func (d *Dispatcher) reserve(endpoint string) *worker {
	select {
	case <-d.stopping:
		return nil
	default:
	}
	w := (*d.byName.Load())[endpoint]
	if w == nil || w.gone.Load() || w.circuit.open.Load() {
		return nil
	}
	if w.reserved.Add(1) > int64(cap(w.handoff)) {
		w.reserved.Add(-1)
		return nil
	}
	return w
}

// handOff gives w the delivery it reserved room for: it never blocks.
func (w *worker) handOff(dl outbox.Delivery) { w.handoff <- dl }

// release gives back room that no handoff used: the insert failed, or did
// not insert the plant.
func (w *worker) release() { w.reserved.Add(-1) }

// takeHandoffs attempts w's handed-off deliveries as slots free up, until
// the stop or until the endpoint leaves the file (its rows are dropped).
func (d *Dispatcher) takeHandoffs(w *worker) {
	defer d.loops.Done()
	for {
		select {
		case <-d.stopping:
			d.returnHandoffs(w, "interrupted by shutdown")
			return
		case <-w.stop:
			return
		case dl := <-w.handoff:
			select {
			case w.slots <- struct{}{}:
			case <-d.stopping:
				d.giveBack(dl, "interrupted by shutdown")
				d.returnHandoffs(w, "interrupted by shutdown")
				return
			case <-w.stop:
				return
			}
			w.release()
			if w.gone.Load() { // it answered 410 meanwhile: leave the row due for when the file changes
				<-w.slots
				d.giveBack(dl, "the endpoint answered 410 Gone")
				continue
			}
			d.attempt(w, dl, false)
		}
	}
}

// returnHandoffs makes the handoffs waiting for w due again at once, for
// another replica or the next start, rather than after their lease.
func (d *Dispatcher) returnHandoffs(w *worker, reason string) {
	for {
		select {
		case dl := <-w.handoff:
			d.giveBack(dl, reason)
		default:
			return
		}
	}
}

// giveBack makes a claimed delivery that was not attempted due again.
func (d *Dispatcher) giveBack(dl outbox.Delivery, reason string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.base), settleTimeout)
	defer cancel()
	if err := d.box.Retry(ctx, dl, 0, reason); err != nil {
		d.log.Warn("webhooks: could not give a delivery back to the outbox; it is due again once its lease passes",
			zap.String("endpoint", dl.Endpoint), zap.String("webhook_id", dl.ID), zap.Error(err))
	}
}

var _ outbox.Planner = (*Dispatcher)(nil)

// Plan implements outbox.Planner: what a commit writes for the changes it
// may make, a row per change and endpoint subscribed to its kind. On a
// store that claims as it writes, a row is claimed for a handoff where
// there is room, and written hands the claimed rows of the committed
// changes to their workers and gives back the rest of the room.
func (d *Dispatcher) Plan(cs []changes.Change, claims bool) (rows []outbox.Row, written func(committed map[int64]changes.Committed, err error)) {
	if len(cs) == 0 || len(d.Subscribed()) == 0 {
		return nil, nil // no event to build
	}
	var reserved []*worker // per row when claims; nil for a row written due
	for _, c := range cs {
		endpoints := d.subscribers(c.Kind)
		if len(endpoints) == 0 {
			continue
		}
		ev := EventOf(c)
		for _, ep := range endpoints {
			var w *worker
			if claims {
				w = d.reserve(ep)
				reserved = append(reserved, w)
			}
			rows = append(rows, outbox.Row{ID: outbox.NewID(), Plant: c.Plant(), Kind: c.Kind, Endpoint: ep, Event: ev, Leased: w != nil})
		}
	}
	if !claims || len(rows) == 0 {
		return rows, nil
	}
	return rows, func(committed map[int64]changes.Committed, err error) {
		for i, w := range reserved {
			if w == nil {
				continue
			}
			if c, ok := committed[rows[i].Plant]; err == nil && ok {
				w.handOff(rows[i].Delivery(c))
			} else {
				w.release()
			}
		}
	}
}
