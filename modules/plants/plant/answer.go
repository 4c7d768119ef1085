package plant

import "errors"

// An answer is an error that tells the caller about the data (the id is
// taken, nothing is stored under it), not a failure of the store: the store
// worked, and the request gets a 4xx. Every layer that must tell answers
// from failures asks AnswerOf instead of listing errors, so a new answer
// (a precondition that does not hold, for a conditional PUT) is added here
// once and is at once: committed alongside the other writes of a bolt
// batch, not retried; labelled with its name in the store metrics and not
// a failed span; and mapped to its status by the handlers (whose test
// walks Answers, so a missing status fails it).
type answer struct {
	name string // the store metrics' result label
	text string
}

func (a *answer) Error() string { return a.text }

// Answers are the errors a store returns as answers, for tests that must
// cover every one.
var Answers = []error{ErrConflict, ErrNotFound, ErrPreconditionFailed}

// AnswerOf returns the name of the answer err is or wraps ("conflict",
// "not_found"), or "" when err is nil or a failure.
func AnswerOf(err error) string {
	if err == nil {
		return ""
	}
	if a, ok := errors.AsType[*answer](err); ok {
		return a.name
	}
	return ""
}

// IsAnswer reports whether err is an answer rather than a failure.
func IsAnswer(err error) bool { return AnswerOf(err) != "" }
