package httpapi

import (
	"context"
	"net/http"
)

// UnmatchedRoute is the route label of requests that match no route, so
// that metrics and spans never carry a raw, client-chosen path.
const UnmatchedRoute = "unmatched"

// Record is the router's record of one request, made once at the top of
// the chain. Links below it keep their per-request state in it (the answer
// tracker, a value attached by auth) rather than in context values of their
// own: each context value costs a copy of the request.
//
// It is itself the request's context: the router embeds it in its own
// per-request value, so that one allocation carries everything, and a
// value attached here is found by ctx.Value like any context value.
type Record struct {
	context.Context
	// Template is the matched route's template, or UnmatchedRoute.
	Template string
	// Requires is the matched route's Route.Requires.
	Requires string
	// Lasting is where a lasting answer goes (see Last); the concurrency
	// cap sets it as it admits the request.
	Lasting LastingLimiter

	tracker       AnswerTracker
	attachedKey   any
	attachedValue any
}

type recordKey struct{}

// Value implements context.Context: the record answers for itself and for
// the value attached to it, and passes every other key on.
func (rec *Record) Value(key any) any {
	if _, ok := key.(recordKey); ok {
		return rec
	}
	if rec.attachedKey != nil && key == rec.attachedKey {
		return rec.attachedValue
	}
	return rec.Context.Value(key)
}

// recordFrom returns the router's record of the request ctx belongs to, or
// nil outside the router.
func recordFrom(ctx context.Context) *Record {
	rec, _ := ctx.Value(recordKey{}).(*Record)
	return rec
}

// RouteTemplate returns the route template the router found for the
// request, or UnmatchedRoute.
func RouteTemplate(ctx context.Context) string {
	if rec := recordFrom(ctx); rec != nil {
		return rec.Template
	}
	return UnmatchedRoute
}

// RequiredScope returns the scope the request's route requires
// (Route.Requires), "" for none or outside the router.
func RequiredScope(ctx context.Context) string {
	if rec := recordFrom(ctx); rec != nil {
		return rec.Requires
	}
	return ""
}

// Attach makes ctx.Value(key) answer value for the rest of the request,
// for every link of the chain, outer ones included once the request is
// served, at no cost: the router's record holds it. It reports false when
// there is no record (outside the router) or the record holds a value of
// another key already; the caller then derives a context of its own.
// Auth attaches the caller's principal this way. key must be comparable.
func Attach(ctx context.Context, key, value any) bool {
	rec := recordFrom(ctx)
	if rec == nil || (rec.attachedKey != nil && rec.attachedKey != key) {
		return false
	}
	rec.attachedKey, rec.attachedValue = key, value
	return true
}

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

// WithAnswerTracker returns r carrying t. Behind the router, t goes into
// the request's record, at no cost; elsewhere into a new context.
func WithAnswerTracker(r *http.Request, t AnswerTracker) *http.Request {
	if rec := recordFrom(r.Context()); rec != nil {
		rec.tracker = t
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), answerTrackerKey{}, t))
}

// AnswerTrackerFrom returns the tracker in ctx, or nil.
func AnswerTrackerFrom(ctx context.Context) AnswerTracker {
	if rec := recordFrom(ctx); rec != nil && rec.tracker != nil {
		return rec.tracker
	}
	t, _ := ctx.Value(answerTrackerKey{}).(AnswerTracker)
	return t
}
