// Package batching is the hand-off between the callers of a store's writes
// and the goroutines that run those writes in batches (bolt's committer,
// postgres's create lanes): a queue that callers leave when their context
// ends, and that closes without a send ever racing the close.
package batching

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed answers a send after Close.
var ErrClosed = errors.New("store is closed")

// Queue carries items from callers to the goroutines that batch them.
type Queue[T any] struct {
	ch     chan T
	mu     sync.RWMutex // held for reading while sending, for writing to close
	closed bool
}

// NewQueue returns a queue that holds up to capacity items unreceived.
func NewQueue[T any](capacity int) *Queue[T] {
	return &Queue[T]{ch: make(chan T, capacity)}
}

// Send queues item. It fails with ErrClosed after Close, or with ctx.Err()
// when ctx ends while the queue is full.
func (q *Queue[T]) Send(ctx context.Context, item T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrClosed
	}
	select {
	case q.ch <- item:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Receive is the receiving end; it is closed, once drained, after Close.
func (q *Queue[T]) Receive() <-chan T { return q.ch }

// Len is the number of items queued and not received yet.
func (q *Queue[T]) Len() int { return len(q.ch) }

// Close stops new sends; the items already queued stay to be received.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
}

// Outcome is what a batch tells the caller of one of its items.
type Outcome[T any] struct {
	Value T
	Err   error
}

// Await returns what arrives on done, or ctx.Err() when ctx ends first:
// a caller's wait for the outcome of the batch that holds its item.
func Await[T any](ctx context.Context, done <-chan Outcome[T]) (T, error) {
	select {
	case o := <-done:
		return o.Value, o.Err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
