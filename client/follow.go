package client

import (
	"context"
	"errors"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client/internal/gen"
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
	// snapshot (or a listing) read: after the first one and after each
	// start over. A snapshot's copy is the store's as of one moment, its
	// end; a listing (from a server without snapshots) reads page after
	// page, so while writers run it may mix moments, and the changes that
	// follow (from the listing's first cursor) bring the copy up to date.
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
	// change of the plant), or the snapshot's for a plant a snapshot gave;
	// 0 for what a listing gave, which carries none.
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
// to the store's, with no code of the caller's for recovery: it reads a
// snapshot of the plants from the change feed (snapshot=true), yielding
// each as Added and then InSync, and follows the feed from the snapshot's
// end (so nothing committed between the two is missed, and nothing is
// given twice), yielding each change as Added, Changed or Removed. From a
// server without snapshots it lists the plants instead and follows from
// the listing's cursor; so it does with Types that leave out
// PlantCreated, the type a snapshot's plants are given as. When the feed
// refuses its cursor as gone (ErrCursorGone: the follower fell behind the
// server's retention, or the store was restored), it starts over by
// itself: it reads a snapshot again and yields only the difference from
// what it yielded before, then InSync again. A caller that applies every event
// to its copy holds, at each InSync, what the listing read, and with the
// changes that follow, what the store holds.
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

// resync reads the plants (a snapshot, else a listing) and yields what
// differs from held (every plant at the start), updating held, then
// InSync; it returns the feed's cursor to follow from, false when
// iteration is over.
func (c *Client) resync(ctx context.Context, opts FollowOptions, held map[int64]Plant, yield func(Event, error) bool) (string, bool) {
	listed, versions, cursor, err := c.readSnapshot(ctx, opts)
	if errors.Is(err, errNoSnapshot) {
		versions = nil
		listed, cursor, err = c.listAll(ctx, opts)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		yield(Event{}, err)
		return "", false
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
	for _, id := range slices.Sorted(maps.Keys(listed)) {
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
		if !yield(Event{Kind: kind, Plant: p, Version: versions[id]}, nil) {
			return "", false
		}
	}
	if !yield(Event{Kind: InSync}, nil) {
		return "", false
	}
	return cursor, true
}

// errNoSnapshot says the server reads no snapshot (its first page says
// nothing of one), or Follow's types leave out the snapshot's plants.
var errNoSnapshot = errors.New("client: no snapshot")

// readSnapshot reads a snapshot of the plants (of opts.Tag) to its end,
// page by page, applying each item to a copy built from nothing, and
// returns the copy, each plant's version, and the cursor the feed goes on
// from. A snapshot whose cursor is gone (it outlasted the retention) is
// read again from its start; failures that may pass are retried.
func (c *Client) readSnapshot(ctx context.Context, opts FollowOptions) (map[int64]Plant, map[int64]int64, string, error) {
	if len(opts.Types) != 0 && !slices.Contains(opts.Types, PlantCreated) {
		return nil, nil, "", errNoSnapshot
	}
	params := gen.ListChangesParams{Tag: opts.Tag, Limit: new(int32(1000))}
	if opts.Limit != 0 {
		params.Limit = new(int32(min(opts.Limit, 1<<30))) //nolint:gosec // G115: clamped
	}
	if len(opts.Types) != 0 {
		params.Types = new(strings.Join(opts.Types, ","))
	}
	backoff := retryPolicy{first: c.retries.first, max: opts.MaxBackoff}
	if backoff.max <= 0 {
		backoff.max = DefaultChangesMaxBackoff
	}
	if backoff.first <= 0 {
		backoff.first = defaultRetries.first
	}
	listed, versions := map[int64]Plant{}, map[int64]int64{}
	cursor := ""
	for failures := 0; ; {
		if cursor == "" {
			params.Snapshot = new(true)
			clear(listed)
			clear(versions)
		} else {
			params.Snapshot = nil
		}
		changes, next, state, retryAfter, err := c.changesPage(ctx, cursor, params, 0)
		switch {
		case err == nil:
		case errors.Is(err, ErrCursorGone) && cursor != "":
			cursor = "" // start the snapshot again
			continue
		case ctx.Err() != nil:
			return nil, nil, "", ctx.Err()
		case !transient(err):
			return nil, nil, "", err
		default:
			pause := backoff.backoff(failures)
			if d, ok := parseRetryAfter(retryAfter, time.Now()); ok {
				pause = d
			}
			failures++
			if !sleep(ctx, pause) {
				return nil, nil, "", ctx.Err()
			}
			continue
		}
		failures = 0
		if state == "" {
			return nil, nil, "", errNoSnapshot
		}
		for _, ch := range changes {
			if ch.Type == PlantDeleted || ch.Plant == nil {
				delete(listed, ch.ID)
				delete(versions, ch.ID)
			} else {
				listed[ch.ID] = *ch.Plant
				versions[ch.ID] = ch.Version
			}
		}
		cursor = next
		if state == string(gen.Complete) {
			return listed, versions, cursor, nil
		}
	}
}

// listAll lists the plants (of opts.Tag) and returns them with the feed's
// cursor taken before the listing's first page.
func (c *Client) listAll(ctx context.Context, opts FollowOptions) (map[int64]Plant, string, error) {
	listed := map[int64]Plant{}
	cursor := ""
	next := &ListOptions{Limit: 1000, Tag: opts.Tag}
	for first := true; next != nil; first = false {
		page, err := c.List(ctx, *next)
		if err != nil {
			return nil, "", err
		}
		if first {
			if page.ChangesCursor == "" {
				return nil, "", errors.New("client: the server has no change feed (its listing carries no Plantstore-Changes-Cursor)")
			}
			cursor = page.ChangesCursor
		}
		for _, p := range page.Plants {
			listed[p.ID] = p
		}
		next = page.Next
	}
	return listed, cursor, nil
}

func samePlant(a, b Plant) bool {
	return a.ID == b.ID && a.Name == b.Name && (a.Tag == nil) == (b.Tag == nil) && (a.Tag == nil || *a.Tag == *b.Tag)
}
