package webhooks

import (
	"context"
	"time"

	"github.com/plantstore/plantstore/modules/outbox"
)

// statsInterval is how often the outbox's size and oldest age are read for
// the metrics.
const statsInterval = 5 * time.Second

// readStats refreshes the outbox metrics until the stop.
func (d *Dispatcher) readStats() {
	defer d.loops.Done()
	tick := time.NewTicker(statsInterval)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(d.base, settleTimeout)
		stats, err := d.box.Stats(ctx)
		cancel()
		if err == nil {
			for _, name := range d.workerNames() {
				if _, ok := stats[name]; !ok {
					stats[name] = outbox.Stats{}
				}
			}
			d.metrics.outbox.set(stats, time.Now())
		}
		select {
		case <-d.stopping:
			return
		case <-tick.C:
		}
	}
}
