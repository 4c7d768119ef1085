package changes

import "github.com/plantstore/plantstore/modules/plants/plant"

// Filter is what a follower of the log asks to be given: the changes of
// one tag's plants, of some kinds. It reads only a record, so every store's
// log is filtered alike, by its reader. Its zero value keeps every
// change as it is.
//
// A tag filter follows the plants in the tag: a change that leaves a plant
// in the tag (a create or a replace with that tag) is given as it is, and
// a change that may take a plant out of it is given as that plant's
// deletion. A log record carries the plant as it is after the change, not
// the tag it had before, so a replace with another tag and every delete
// are given as a deletion (of id and version alone) whether or not the
// plant was in the tag: a follower that mirrors the tag deletes what it
// holds and ignores a deletion of a plant it does not hold. A plant that
// enters the tag by a replace arrives as plant.updated: a mirror applies
// an update as an insert or a replace. A create with another tag is never
// given: the plant was in no tag before it.
type Filter struct {
	// Tag, when set, keeps the changes of the plants with exactly this
	// tag, as above.
	Tag *string
	// Kinds, when not empty, keeps only the changes given as these kinds
	// (after a tag filter made a leave a deletion).
	Kinds []Kind
}

// IsZero reports whether f keeps every change as it is.
func (f Filter) IsZero() bool { return f.Tag == nil && len(f.Kinds) == 0 }

// Apply returns the change as f gives it, and whether f gives it at all.
func (f Filter) Apply(r Record) (Record, bool) {
	if f.Tag != nil && (r.Plant.Tag == nil || *r.Plant.Tag != *f.Tag) {
		if r.Kind == Created {
			return r, false
		}
		r.Kind, r.Plant = Deleted, plant.Plant{ID: r.Plant.ID}
	}
	if len(f.Kinds) == 0 {
		return r, true
	}
	for _, k := range f.Kinds {
		if k == r.Kind {
			return r, true
		}
	}
	return r, false
}

// KindOf returns the kind whose event type (Kind.String) is name; false
// when there is none.
func KindOf(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}
