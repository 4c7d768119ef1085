package webhooks

import (
	"context"
	"sync"
)

// background is the dispatcher's goroutines (an endpoint's loop, its
// attempts, the handoffs, the wakes, the stats) and their stop.
type background struct {
	// base is every attempt's context: cancelled once the stop's budget is
	// spent, so that an attempt in flight ends and stays pending.
	base     context.Context
	cancel   context.CancelFunc
	stopping chan struct{} // closed at the stop: no new claim or attempt
	stopOnce sync.Once
	loops    sync.WaitGroup
}

func (b *background) init() {
	b.base, b.cancel = context.WithCancel(context.Background())
	b.stopping = make(chan struct{})
}

// stop ends the loops: they take no new work, and what is in flight may
// finish within ctx; then its context is cancelled and stop waits for it.
func (b *background) stop(ctx context.Context) {
	b.stopOnce.Do(func() { close(b.stopping) })
	done := make(chan struct{})
	go func() { b.loops.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		b.cancel()
		<-done
	}
	b.cancel()
}
