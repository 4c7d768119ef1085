package client

import (
	"context"
	"errors"
	"iter"
	"slices"
	"time"
)

// EventKind says what a follower does with an Event.
type EventKind int

// Event kinds.
const (
	// Added: the plant is new to the follower's copy; store it.
	Added EventKind = iota + 1
	// Changed: the plant the copy holds changed; replace it.
	Changed
	// Removed: the plant is gone (deleted, or out of the followed tag);
	// drop it. Only its ID is set.
	Removed
	// InSync: the copy, with every event before applied, holds what a
	// listing read: after the first listing and after each start over. A
	// listing reads page after page, so while writers run it may mix
	// moments; the changes that follow (from the listing's first cursor)
	// bring the copy up to date.
	InSync
)

func (k EventKind) String() string {
	switch k {
	case Added:
		return "added"
	case Changed:
		return "changed"
	case Removed:
		return "removed"
	case InSync:
		return "in sync"
	}
	return "unknown"
}

// Event is one step for a follower's copy of the plants.
type Event struct {
	Kind EventKind
	// Plant is the plant as it now is (its ID alone for Removed; unset for
	// InSync).
	Plant Plant
	// Version is the change's version in the feed (greater for a later
	// change of the plant); 0 for what a listing gave, which carries none.
	Version int64
}

// FollowOptions tune Follow.
type FollowOptions struct {
	// Tag, unless nil, follows only the plants with exactly this tag (not
	// empty: the feed refuses it): a plant leaving it is Removed, a plant
	// entering it Added.
	Tag *string
	// Types, unless empty, keeps only the feed's changes of these types
	// (PlantCreated, PlantUpdated, PlantDeleted). The copy then equals the
	// store only for what those types tell: without PlantDeleted nothing
	// is ever Removed but by a start over.
	Types []string
	// Wait, Limit and MaxBackoff are those of ChangesOptions.
	Wait       time.Duration
	Limit      int
	MaxBackoff time.Duration
}

// Follow keeps a copy of the plants (those with opts.Tag, when set) equal
// to the store's, with no code of the caller's for recovery: it lists the
// plants, yielding each as Added and then InSync, and follows the change
// feed from the listing's cursor (so nothing committed between the two is
// missed), yielding each change as Added, Changed or Removed. When the
// feed refuses its cursor as gone (ErrCursorGone: the follower fell
// behind the server's retention, or the store was restored), it starts
// over by itself: it lists again and yields only the difference from what
// it yielded before, then InSync again. A caller that applies every event
// to its copy holds, at each InSync, what the listing read, and with the
// changes that follow, what the store holds: the feed starts at the
// listing's first cursor, so every change made while the listing ran is
// given after it.
//
// Follow ends when the caller stops, ctx ends (its error is yielded) or
// the server refuses for good (a token without plants:read, a bad filter:
// the *Error is yielded). Failures that may pass are retried, as Changes
// and List retry them. Follow remembers the plants it yielded (to tell
// Added from Changed and to compute a start over's difference), so it
// holds a copy of its own as large as the caller's.
func (c *Client) Follow(ctx context.Context, opts FollowOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		held := map[int64]Plant{}
		for {
			cursor, ok := c.resync(ctx, opts, held, yield)
			if !ok {
				return
			}
			feed := c.Changes(ctx, cursor, ChangesOptions{Wait: opts.Wait, Limit: opts.Limit, MaxBackoff: opts.MaxBackoff, Tag: opts.Tag, Types: opts.Types})
			gone := false
			for ch, err := range feed {
				if err != nil {
					if errors.Is(err, ErrCursorGone) && ctx.Err() == nil {
						gone = true
						break
					}
					yield(Event{}, err)
					return
				}
				ev, ok := apply(held, ch)
				if ok && !yield(ev, nil) {
					return
				}
			}
			if !gone {
				return
			}
		}
	}
}

// apply records ch in held and returns the event it is for the caller;
// false when it changes nothing the caller holds (a tag filter's deletion
// of a plant never in the tag).
func apply(held map[int64]Plant, ch Change) (Event, bool) {
	if ch.Type == PlantDeleted || ch.Plant == nil {
		if _, ok := held[ch.ID]; !ok {
			return Event{}, false
		}
		delete(held, ch.ID)
		return Event{Kind: Removed, Plant: Plant{ID: ch.ID}, Version: ch.Version}, true
	}
	kind := Added
	if _, ok := held[ch.ID]; ok {
		kind = Changed
	}
	held[ch.ID] = *ch.Plant
	return Event{Kind: kind, Plant: *ch.Plant, Version: ch.Version}, true
}

// resync lists the plants and yields what differs from held (every plant
// at the start), updating held, then InSync; it returns the feed's cursor
// taken before the listing, false when iteration is over.
func (c *Client) resync(ctx context.Context, opts FollowOptions, held map[int64]Plant, yield func(Event, error) bool) (string, bool) {
	listed := map[int64]Plant{}
	var order []int64
	cursor := ""
	next := &ListOptions{Limit: 1000, Tag: opts.Tag}
	for first := true; next != nil; first = false {
		page, err := c.List(ctx, *next)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			yield(Event{}, err)
			return "", false
		}
		if first {
			if page.ChangesCursor == "" {
				yield(Event{}, errors.New("client: the server has no change feed (its listing carries no Plantstore-Changes-Cursor)"))
				return "", false
			}
			cursor = page.ChangesCursor
		}
		for _, p := range page.Plants {
			listed[p.ID] = p
			order = append(order, p.ID)
		}
		next = page.Next
	}
	gone := make([]int64, 0)
	for id := range held {
		if _, ok := listed[id]; !ok {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		delete(held, id)
		if !yield(Event{Kind: Removed, Plant: Plant{ID: id}}, nil) {
			return "", false
		}
	}
	for _, id := range order {
		p := listed[id]
		old, ok := held[id]
		if ok && samePlant(old, p) {
			continue
		}
		held[id] = p
		kind := Added
		if ok {
			kind = Changed
		}
		if !yield(Event{Kind: kind, Plant: p}, nil) {
			return "", false
		}
	}
	if !yield(Event{Kind: InSync}, nil) {
		return "", false
	}
	return cursor, true
}

func samePlant(a, b Plant) bool {
	return a.ID == b.ID && a.Name == b.Name && (a.Tag == nil) == (b.Tag == nil) && (a.Tag == nil || *a.Tag == *b.Tag)
}
