package plant

// CreateResult says what a successful Create did. Its zero value goes with
// an error: a failed create did nothing a caller may count on.
type CreateResult uint8

const (
	// Created means the plant was stored by this call: the one event that
	// counts as a creation (the metric, and later a webhook).
	Created CreateResult = iota + 1
	// Unchanged means an identical plant was stored already (a client's
	// retry, most often): nothing was written.
	Unchanged
)

// String names the result, for logs and test failures.
func (r CreateResult) String() string {
	switch r {
	case Created:
		return "created"
	case Unchanged:
		return "unchanged"
	}
	return "none"
}
