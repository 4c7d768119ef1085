package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client/internal/gen"
)

// Change is one committed change of a plant, as the change feed
// (GET /plants/changes) gives it.
type Change struct {
	// Cursor is the change's position in the feed: following again from
	// it resumes after this change. Cursors are opaque.
	Cursor string
	// Type is plant.created, plant.updated or plant.deleted.
	Type string
	// ID is the plant's id.
	ID int64
	// Version increases with every change of the store; of two changes of
	// a plant, the later has the greater version.
	Version int64
	// Time is the commit's time.
	Time time.Time
	// Plant is the plant as the change left it; nil for plant.deleted.
	Plant *Plant
	// Snapshot marks a plant of a snapshot (ChangesOptions.Snapshot): a
	// synthetic plant.created of the snapshot's version, timed when the
	// snapshot read it.
	Snapshot bool
}

// Change types.
const (
	PlantCreated = "plant.created"
	PlantUpdated = "plant.updated"
	PlantDeleted = "plant.deleted"
)

// ChangesOptions tune Changes.
type ChangesOptions struct {
	// Wait is how long each request waits for the next change (the long
	// poll): 0 for 30 s, at most 60 s.
	Wait time.Duration
	// Limit is the most changes per request: 1 to 1000; 0 for the
	// server's default (100).
	Limit int
	// MaxBackoff caps the wait between attempts after a failure; 0 for
	// 30 s.
	MaxBackoff time.Duration
	// Tag, unless nil, keeps the changes of the plants with exactly this
	// tag: a plant leaving the tag (an update to another tag, a delete)
	// comes as a plant.deleted of it.
	Tag *string
	// Types, unless empty, keeps the changes of these types (PlantCreated,
	// PlantUpdated, PlantDeleted), each at most once.
	Types []string
	// Snapshot, with no cursor to start after, starts with a snapshot:
	// every current plant (of Tag) as a plant.created marked Snapshot,
	// then the changes after it, none missed and none given twice. The
	// cursors of its plants resume the snapshot. With Types, PlantCreated
	// must be among them.
	Snapshot bool
}

// Defaults of ChangesOptions.
const (
	DefaultChangesWait       = 30 * time.Second
	DefaultChangesMaxBackoff = 30 * time.Second
)

// changesAnswerMargin is how long past its wait a long poll may take to be
// answered before the client gives up on it and asks again.
const changesAnswerMargin = 30 * time.Second

// Changes follows the change feed after the cursor after (a listing's
// ChangesCursor, or a Change's Cursor to resume after it; "" for the
// oldest change kept), yielding each change once, in commit order, and
// then waiting for the next: it ends only when the caller stops, ctx ends
// (its error is yielded), or the feed refuses the cursor. Failures that
// may pass (a connection lost, a 5xx, a 429) are retried from the same
// cursor with a backoff that doubles up to opts.MaxBackoff, however long
// they last. A cursor older than the server's retention window, or one
// the store's history does not hold (another store's, one given after the
// backup it was restored from), yields an error matching ErrCursorGone:
// the caller lists the plants again (List's Page.ChangesCursor) and
// follows from there. Other refusals (a bad
// cursor, a token without plants:read) are yielded as their *Error.
func (c *Client) Changes(ctx context.Context, after string, opts ChangesOptions) iter.Seq2[Change, error] {
	wait := opts.Wait
	if wait <= 0 {
		wait = DefaultChangesWait
	}
	backoff := retryPolicy{first: c.retries.first, max: opts.MaxBackoff}
	if backoff.max <= 0 {
		backoff.max = DefaultChangesMaxBackoff
	}
	if backoff.first <= 0 {
		backoff.first = defaultRetries.first
	}
	params := gen.ListChangesParams{Wait: new(wait.String())}
	if opts.Limit != 0 {
		params.Limit = new(int32(min(opts.Limit, 1<<30))) //nolint:gosec // G115: clamped
	}
	params.Tag = opts.Tag
	if len(opts.Types) != 0 {
		params.Types = new(strings.Join(opts.Types, ","))
	}
	return func(yield func(Change, error) bool) {
		cursor := after
		for failures := 0; ; {
			params.Snapshot = nil
			if opts.Snapshot && cursor == "" {
				params.Snapshot = new(true) // the first page; the next ones go on from its next
			}
			changes, next, _, retryAfter, err := c.changesPage(ctx, cursor, params, wait)
			if err != nil {
				if ctx.Err() != nil {
					yield(Change{}, ctx.Err())
					return
				}
				if !transient(err) {
					yield(Change{}, err)
					return
				}
				pause := backoff.backoff(failures)
				if d, ok := parseRetryAfter(retryAfter, time.Now()); ok {
					pause = d
				}
				failures++
				if !sleep(ctx, pause) {
					yield(Change{}, ctx.Err())
					return
				}
				continue
			}
			failures = 0
			for _, ch := range changes {
				if !yield(ch, nil) {
					return
				}
			}
			cursor = next
		}
	}
}

// changesPage asks for one page after cursor, waiting up to wait. It uses
// the client without its request timeout (a long poll outlasts it), bound
// by a timeout of its own. snapshot is the page's snapshot field: "" for
// a page of no snapshot (or of a server that reads none).
func (c *Client) changesPage(ctx context.Context, cursor string, params gen.ListChangesParams, wait time.Duration) (changes []Change, next, snapshot, retryAfter string, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait+changesAnswerMargin)
	defer cancel()
	if cursor != "" {
		params.After = &cursor
	}
	resp, err := (&gen.ClientWithResponses{ClientInterface: c.stream}).ListChangesWithResponse(ctx, &params)
	if err != nil { // no answer, a body cut off, or not the JSON it claims to be: all may pass
		return nil, "", "", "", &transientError{err}
	}
	_, retryAfter, err = answer(resp.HTTPResponse, resp.Body, http.StatusOK)
	if err != nil {
		return nil, "", "", retryAfter, err
	}
	if resp.JSON200 == nil {
		return nil, "", "", "", &transientError{errors.New("client: the change feed answered 200 without a JSON page (Content-Type " + resp.HTTPResponse.Header.Get("Content-Type") + ")")}
	}
	page := resp.JSON200
	changes = make([]Change, len(page.Changes))
	for i, ch := range page.Changes {
		changes[i] = Change{Cursor: ch.Cursor, Type: string(ch.Type), ID: ch.Id, Version: ch.Version, Time: ch.Timestamp, Snapshot: ch.Snapshot != nil && *ch.Snapshot}
		if p := ch.Plant; p != nil {
			changes[i].Plant = &Plant{ID: p.Id, Name: p.Name, Tag: p.Tag}
		}
	}
	if page.Snapshot != nil {
		snapshot = string(*page.Snapshot)
	}
	return changes, page.Next, snapshot, "", nil
}

// transientError is a failure that asking again may cure, though it is not
// an answer's status: no answer, or a body cut off in transit.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// transient reports whether a follower should ask again after err: an
// error that is not an answer (the connection failed), a 5xx, or a 429.
// Any other answer would be the same again.
func transient(err error) bool {
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		return true
	}
	return apiErr.Status >= 500 || apiErr.Status == http.StatusTooManyRequests
}

// sleep waits d, false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
