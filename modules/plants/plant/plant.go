// Package plant holds the domain of the Plant Store: the Plant record, the
// Store interface every backend implements, and the errors a Store returns.
// It imports nothing of the service so that every store package can use it.
package plant

// Plant is a stored plant. Tag is nil when the client sent none, which is
// different from an empty tag: the API answers a tag only when one was given.
type Plant struct {
	ID   int64
	Name string
	Tag  *string
}

// Equal reports whether two plants carry the same id, name and tag.
func (p Plant) Equal(o Plant) bool {
	if p.ID != o.ID || p.Name != o.Name || (p.Tag == nil) != (o.Tag == nil) {
		return false
	}
	return p.Tag == nil || *p.Tag == *o.Tag
}

// StringPtr returns a pointer to s, for building tags.
func StringPtr(s string) *string { return &s }
