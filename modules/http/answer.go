package httpserver

import "context"

// AnswerTracker watches a request's answer being written. The telemetry
// middlewares keep one in the request's context (they capture the status
// and size anyway), so that links below them, such as Recover, can ask
// whether the answer has begun without wrapping the writer once more.
type AnswerTracker interface {
	// AnswerStarted reports whether a final status or body bytes were
	// written; an interim 1xx status does not count.
	AnswerStarted() bool
}

type answerTrackerKey struct{}

// WithAnswerTracker returns ctx carrying t.
func WithAnswerTracker(ctx context.Context, t AnswerTracker) context.Context {
	return context.WithValue(ctx, answerTrackerKey{}, t)
}

// AnswerTrackerFrom returns the tracker in ctx, or nil.
func AnswerTrackerFrom(ctx context.Context) AnswerTracker {
	t, _ := ctx.Value(answerTrackerKey{}).(AnswerTracker)
	return t
}
