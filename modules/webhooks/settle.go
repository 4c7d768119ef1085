package webhooks

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/outbox"
)

// Delivered events are settled in batches: at most every settleInterval,
// or at once when maxSettleBatch are waiting. One write for many keeps a
// busy sender from costing a commit (and on postgres a WAL flush) per
// event; an event whose settling a crash prevents is sent again, which
// at-least-once allows.
const (
	settleInterval = 50 * time.Millisecond
	maxSettleBatch = 256
)

// settler settles delivered events in the outbox, in batches.
type settler struct {
	box outbox.Outbox
	log *zap.Logger

	mu        sync.Mutex
	delivered []outbox.Delivery // to settle as delivered in the outbox
	full      chan struct{}     // a full batch is waiting
	last      chan struct{}     // closed once the loops are done: settle the rest and stop
	done      chan struct{}
	started   bool // start ran: the loop is running
}

func newSettler(box outbox.Outbox, log *zap.Logger) *settler {
	return &settler{box: box, log: log, full: make(chan struct{}, 1), last: make(chan struct{}), done: make(chan struct{})}
}

// later queues a delivered event to be settled.
func (s *settler) later(dl outbox.Delivery) {
	s.mu.Lock()
	s.delivered = append(s.delivered, dl)
	full := len(s.delivered) >= maxSettleBatch
	s.mu.Unlock()
	if full {
		select {
		case s.full <- struct{}{}:
		default:
		}
	}
}

// start runs the loop that settles in batches until stop.
func (s *settler) start() {
	s.started = true
	go s.run()
}

func (s *settler) run() {
	defer close(s.done)
	tick := time.NewTicker(settleInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-s.full:
		case <-s.last:
			s.settle()
			return
		}
		s.settle()
	}
}

func (s *settler) settle() {
	s.mu.Lock()
	batch := s.delivered
	s.delivered = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := s.box.Delivered(ctx, batch); err != nil {
		s.log.Warn("webhooks: could not settle delivered events in the outbox; they will be sent again",
			zap.Int("events", len(batch)), zap.Error(err))
	}
}

// stop settles what was delivered last and ends the loop, once the
// attempts are done; a settler that never started has none.
func (s *settler) stop() {
	select {
	case <-s.last:
		return // stopped before
	default:
	}
	close(s.last)
	if s.started {
		<-s.done
	}
}
