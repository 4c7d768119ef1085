package httpserver

import (
	"context"
	"net/http"
)

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

// WithAnswerTracker returns r carrying t. Behind Resolve, t goes into the
// request's resolved record, at no cost; elsewhere into a new context.
func WithAnswerTracker(r *http.Request, t AnswerTracker) *http.Request {
	if res, ok := r.Context().Value(resolvedKey{}).(*resolved); ok {
		res.tracker = t
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), answerTrackerKey{}, t))
}

// AnswerTrackerFrom returns the tracker in ctx, or nil.
func AnswerTrackerFrom(ctx context.Context) AnswerTracker {
	if res, ok := ctx.Value(resolvedKey{}).(*resolved); ok && res.tracker != nil {
		return res.tracker
	}
	t, _ := ctx.Value(answerTrackerKey{}).(AnswerTracker)
	return t
}
