package plants

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// The change feed, GET /plants/changes: the store's change log (see
// changes.ChangeLog) from a cursor on, as pages (optionally waiting for the
// next change: a long poll) or as a stream of server-sent events
// (feedstream.go). A follower starts with a snapshot of the plants and
// follows on from its end in the same call (snapshot=true,
// feedsnapshot.go), or lists the plants, taking the listing's
// Plantstore-Changes-Cursor, then follows from that cursor: either way it
// misses nothing and never needs to start again unless its cursor falls
// out of the log's retention window (410).

// Limits of the feed's query. A page holds as many changes as a listing
// page holds plants (the limit parses as list's does), and a long poll
// waits at most a minute: longer than that, proxies and load balancers
// start cutting idle answers.
const (
	defaultChangesLimit = defaultListLimit
	maxChangesWait      = 60 * time.Second
)

// ChangesCursorHeader is the header of every GET /plants page: the change
// log's head taken before the page was read, where a follower that built
// its copy from the listing starts following.
const ChangesCursorHeader = "Plantstore-Changes-Cursor"

// changesPoll is how often a waiting follower asks the log again even when
// nothing woke it: a wake-up is best effort (another replica's commit is
// known by a notification, which can be lost).
const changesPoll = time.Second

// changesGather is how long a waiting follower's answer is held, once a
// change has come, for the changes committed right after it: under a
// steady stream of commits a follower then reads one page per gather, not
// one per commit, and each read it saves is a query and an answer the
// writers' cores do not do. It is the latency the feed adds to a change.
const changesGather = 10 * time.Millisecond

// gather waits changesGather; false when gone closes or the server stops
// first.
func (f *Feed) gather(gone <-chan struct{}) bool {
	t := time.NewTimer(changesGather)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-gone:
		return false
	case <-f.stopping:
		return false
	}
}

// answerMargin is the time an answer gets to be written once its wait is
// over: a long poll outlasts the server's write timeout, so it moves its
// connection's write deadline past its wait plus this.
const answerMargin = 30 * time.Second

// goneMessage is the 410's: what a follower whose cursor fell out of the
// retention window does next.
const goneMessage = "the cursor is older than the change log's retention window: " + listAgain

// unknownMessage is the 410's for a cursor of another history: another
// store's, or one that a copy of this store restored from a backup never
// wrote. The follower may hold changes this store does not, and does the
// same as past the retention window.
const unknownMessage = "the cursor is not one of this store's history (another store's, or given after the backup this store was restored from): " + listAgain

const listAgain = "list the plants again (GET /plants) and follow the changes from the listing's " + ChangesCursorHeader + " header"

// Feed serves the change feed from a store's change log.
type Feed struct {
	changes  changes.ChangeLog // nil: the feed answers 404
	stopping <-chan struct{}
	log      *zap.Logger
}

// NewFeed returns the change feed of log (nil: a store that keeps none,
// whose feed answers 404). The feed's long answers (a long poll, a stream)
// end when stopping closes: the server's shutdown, which waits for every
// answer in flight; a nil stopping never closes.
func NewFeed(log changes.ChangeLog, stopping <-chan struct{}, logger *zap.Logger) *Feed {
	return &Feed{changes: log, stopping: stopping, log: logger}
}

// Routes is the feed's one operation. The router prefers its literal path
// over the handlers' "/plants/{id}".
func (f *Feed) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Method: http.MethodGet, Path: "/plants/changes", Handler: http.HandlerFunc(f.serve), Requires: principal.ScopePlantsRead},
	}
}

// changesQuery is a parsed feed query; without an after, the zero cursor:
// the log's beginning.
type changesQuery struct {
	after changes.Cursor
	// now: the query's after is "now", the log's head when it is read
	// (see startAtNow), instead of a cursor.
	now    bool
	limit  int
	wait   time.Duration
	filter changes.Filter
	// snapshot: snapshot=true, a snapshot from its start; resume: the
	// after is a snapshot's cursor, a snapshot to go on with.
	snapshot bool
	resume   *snapshotCursor
}

// serve handles GET /plants/changes.
func (f *Feed) serve(w http.ResponseWriter, r *http.Request) {
	if f.changes == nil {
		httperr.Write(w, http.StatusNotFound, "this server keeps no change log")
		return
	}
	q, err := parseChangesQuery(r.URL.RawQuery)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	stream := acceptsEventStream(r.Header)
	if stream && q.now && r.Header.Get("Last-Event-ID") != "" {
		q.now = false // a stream resuming goes on from its last event, not from now
	}
	if stream || q.wait > 0 {
		// A stream or a long poll lasts: it leaves the shared request
		// slots for the followers' own, capped per token.
		end, ok := httpapi.Last(w, r, httpapi.Follow, callerID(r))
		if !ok {
			return
		}
		defer end()
	}
	if q.now && !f.startAtNow(w, r, &q) {
		return
	}
	if stream {
		f.stream(w, r, q)
		return
	}
	if q.snapshot || q.resume != nil {
		f.snapshotPage(w, r, q)
		return
	}
	f.poll(w, r, q)
}

// startAtNow sets q.after to the log's head: after=now follows from here
// on without reading the history. False when the head could not be read
// (the answer is written).
func (f *Feed) startAtNow(w http.ResponseWriter, r *http.Request, q *changesQuery) bool {
	head, err := f.changes.Head(r.Context())
	if err != nil {
		f.readError(w, r, err)
		return false
	}
	q.after = head
	return true
}

// filterRecords keeps in place the records filter gives, as it gives them.
func filterRecords(records []changes.Record, filter changes.Filter) []changes.Record {
	kept := records[:0]
	for _, rec := range records {
		if rec, ok := filter.Apply(rec); ok {
			kept = append(kept, rec)
		}
	}
	return kept
}

// poll answers one page of changes after q.after. With a wait and
// no change yet, it holds the answer until a change commits (the log's
// Wait, and a poll every changesPoll in case a wake-up was lost), the wait
// ends, or the server shuts down; the last two answer an empty page.
func (f *Feed) poll(w http.ResponseWriter, r *http.Request, q changesQuery) {
	ctx := r.Context()
	var waitOver <-chan time.Time
	var poll *time.Ticker
	if q.wait > 0 {
		extendWriteDeadline(w, q.wait+answerMargin)
		timer := time.NewTimer(q.wait)
		defer timer.Stop()
		waitOver = timer.C
		poll = time.NewTicker(changesPoll)
		defer poll.Stop()
	}
	gathered := false
	// start is where the page reads from: q.after, or for a filtered
	// follower, past the changes read that its filter did not keep, so
	// that a quiet filter's next moves on with the log.
	start := q.after
	filtered := !q.filter.IsZero()
	for {
		// The wake-up channel is taken before reading, so that a change
		// committed between the read and the wait still wakes it; a page
		// that does not wait takes none (a store may lock to make one).
		var wake <-chan struct{}
		if q.wait > 0 {
			wake = f.changes.Wait()
		}
		records, err := f.changes.Changes(ctx, start, q.limit)
		if err != nil {
			f.readError(w, r, err)
			return
		}
		read, next := len(records), start
		if read > 0 {
			next = records[read-1].Cursor
		}
		page := records
		if filtered {
			page = filterRecords(records, q.filter)
		}
		// A waiting follower's page that is not full gathers what commits
		// next, then is read again (once); a full page goes at once.
		if q.wait > 0 && len(page) > 0 && read < q.limit && !gathered {
			gathered = true
			if f.gather(ctx.Done()) {
				continue
			}
		}
		if len(page) > 0 || q.wait == 0 {
			writeChangePage(w, page, next)
			return
		}
		if read > 0 { // a filtered follower's: nothing it read matched
			start = next
			if read == q.limit { // more may be waiting already
				if fired(waitOver) {
					writeChangePage(w, nil, start)
					return
				}
				continue
			}
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-waitOver:
			writeChangePage(w, nil, start)
			return
		case <-f.stopping:
			writeChangePage(w, nil, start)
			return
		case <-ctx.Done():
			writeStoreError(f.log, w, r, ctx.Err(), 0) // the client left: 499, not logged as a failure
			return
		}
	}
}

// fired reports whether a timer's channel has fired (taking its value).
func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// readError answers a failed read of the log: 410 for a cursor past the
// retention window or of another history, else as any store failure.
func (f *Feed) readError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, changes.ErrCursorGone):
		httperr.Write(w, http.StatusGone, goneMessage)
		return
	case errors.Is(err, changes.ErrCursorUnknown):
		httperr.Write(w, http.StatusGone, unknownMessage)
		return
	}
	writeStoreError(f.log, w, r, err, 0)
}

// extendWriteDeadline moves the connection's write deadline d from now:
// the server's write timeout would cut off an answer that comes only when
// its wait is over. A writer that cannot move it (a test's recorder) is
// left as it is.
func extendWriteDeadline(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// writeChangePage answers 200 {"changes":[...],"next":"<cursor>"}, next
// being the cursor of the last change read (given or filtered out), or
// the page's after when none was, so that a client always resumes from
// next.
func writeChangePage(w http.ResponseWriter, records []changes.Record, next changes.Cursor) {
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(`{"changes":[`)
	for i, rec := range records {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(appendChange(buf.AvailableBuffer(), rec))
	}
	buf.WriteString(`],"next":"`)
	buf.WriteString(EncodeCursor(next))
	buf.WriteString(`"}`)
	writeJSON(w, http.StatusOK, buf.Bytes())
}

// appendChange appends one change: {"cursor","type","id","version",
// "timestamp","plant"}, the plant as stored, omitted for a deletion.
func appendChange(b []byte, rec changes.Record) []byte {
	return appendChangeAt(b, EncodeCursor(rec.Cursor), rec, false)
}

// appendChangeAt appends a change whose cursor's text is cursor; a plant
// of a snapshot (synthetic) carries "snapshot":true after the plant.
func appendChangeAt(b []byte, cursor string, rec changes.Record, synthetic bool) []byte {
	b = append(b, `{"cursor":"`...)
	b = append(b, cursor...)
	b = append(b, `","type":"`...)
	b = append(b, rec.Kind.String()...)
	b = append(b, `","id":`...)
	b = strconv.AppendInt(b, rec.Plant.ID, 10)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, rec.Version, 10)
	b = append(b, `,"timestamp":"`...)
	b = rec.At.UTC().AppendFormat(b, changes.TimestampLayout)
	b = append(b, '"')
	if rec.Kind != changes.Deleted {
		b = append(b, `,"plant":`...)
		b = appendStoredPlant(b, rec.Plant)
	}
	if synthetic {
		b = append(b, `,"snapshot":true`...)
	}
	return append(b, '}')
}

// parseChangesQuery reads after, limit, wait, tag, types and snapshot from a raw
// query string, as parseListQuery reads its parameters: other parameters
// are ignored, a repeated one or a malformed value is a *badRequestError
// naming it.
func parseChangesQuery(raw string) (changesQuery, error) {
	q := changesQuery{limit: defaultChangesLimit}
	values, err := parseQuery(raw, "after", "limit", "wait", "tag", "types", "snapshot")
	if err != nil {
		return q, err
	}
	if v, ok := values["after"]; ok {
		if v[0] == afterNow {
			q.now = true
		} else if c, ok := parseSnapshotCursor(v[0]); ok {
			q.resume = &c
		} else if q.after, err = ParseCursor(`query parameter "after"`, v[0]); err != nil {
			return q, err
		}
	}
	if v, ok := values["snapshot"]; ok {
		switch v[0] {
		case "true":
			q.snapshot = true
		case "false":
		default:
			return q, badRequest(`query parameter "snapshot" must be true or false, not ` + strconv.Quote(clip(v[0])))
		}
		if _, after := values["after"]; after && q.snapshot {
			return q, badRequest(`query parameter "snapshot" starts a snapshot and takes no "after": a snapshot goes on from a page's "next" without snapshot=true`)
		}
	}
	if v, ok := values["tag"]; ok {
		// An empty tag is a tag the API stores, but as a filter it is
		// far more often a client's template left unfilled.
		if v[0] == "" {
			return q, badRequest(`query parameter "tag" must not be empty`)
		}
		q.filter.Tag = &v[0]
	}
	if v, ok := values["types"]; ok {
		if q.filter.Kinds, err = parseTypes(v[0]); err != nil {
			return q, err
		}
	}
	if v, ok := values["limit"]; ok {
		if q.limit, err = parseLimit(v[0]); err != nil {
			return q, err
		}
	}
	if v, ok := values["wait"]; ok {
		if q.wait, err = parseWait(v[0]); err != nil {
			return q, err
		}
	}
	if q.snapshot || q.resume != nil {
		if _, err := snapshotFrom(q, q.resume); err != nil {
			return q, err
		}
	}
	return q, nil
}

// afterNow is the after that starts at the log's head.
const afterNow = "now"

// parseTypes reads the types filter: event types, comma-separated, each
// at most once.
func parseTypes(s string) ([]changes.Kind, error) {
	names := strings.Split(s, ",")
	if len(names) > len(changes.Kinds) {
		return nil, badRequest(`query parameter "types" lists ` + strconv.Itoa(len(names)) + " types; there are " + strconv.Itoa(len(changes.Kinds)) + ": " + typeNames())
	}
	kinds := make([]changes.Kind, 0, len(names))
	for _, name := range names {
		k, ok := changes.KindOf(name)
		if !ok {
			return nil, badRequest(`query parameter "types" must list event types from ` + typeNames() + `, comma-separated, not ` + strconv.Quote(clip(name)))
		}
		if slices.Contains(kinds, k) {
			return nil, badRequest(`query parameter "types" lists ` + strconv.Quote(name) + " twice")
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// typeNames lists the event types, for the types filter's errors.
func typeNames() string {
	names := make([]string, len(changes.Kinds))
	for i, k := range changes.Kinds {
		names[i] = k.String()
	}
	return strings.Join(names, ", ")
}

// parseWait reads a wait in Go's duration syntax ("30s", "1m", "0"), from
// 0 to maxChangesWait.
func parseWait(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxChangesWait {
		return 0, badRequest(`query parameter "wait" must be a duration from 0s to ` + maxChangesWait.String() + ` such as "30s", not ` + strconv.Quote(clip(s)))
	}
	return d, nil
}

// acceptsEventStream reports whether the request's Accept lists
// text/event-stream: the client wants the feed as server-sent events.
func acceptsEventStream(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mediaType, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream") {
				return true
			}
		}
	}
	return false
}
