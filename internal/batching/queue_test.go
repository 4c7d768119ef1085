package batching

import (
	"context"
	"errors"
	"testing"
)

func TestQueue(t *testing.T) {
	ctx := context.Background()
	q := NewQueue[int](2)
	for _, v := range []int{1, 2} {
		if err := q.Send(ctx, v); err != nil {
			t.Fatalf("Send(%d): %v", v, err)
		}
	}
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2", q.Len())
	}

	// Full: a sender whose context ends leaves with its error.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := q.Send(gone, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send on a full queue with an ended context = %v, want context.Canceled", err)
	}

	// Closed: no more sends; what was queued is still received, in order.
	q.Close()
	q.Close() // a second Close is harmless
	if err := q.Send(ctx, 4); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v, want ErrClosed", err)
	}
	var got []int
	for v := range q.Receive() {
		got = append(got, v)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("received %v after Close, want [1 2]", got)
	}
}

func TestAwait(t *testing.T) {
	done := make(chan Outcome[int], 1)
	want := errors.New("outcome")
	done <- Outcome[int]{Err: want}
	if _, err := Await(context.Background(), done); !errors.Is(err, want) {
		t.Fatalf("Await = %v, want the outcome", err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Await(gone, make(chan Outcome[int])); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await with an ended context = %v, want context.Canceled", err)
	}
}
