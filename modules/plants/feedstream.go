package plants

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// changesHeartbeat is how often an idle stream sends a comment: proxies
// and load balancers close connections idle for longer (60 s is common),
// and a client that left is noticed when the write fails.
const changesHeartbeat = 15 * time.Second

// heartbeatComment is the heartbeat: a comment line, which an SSE client
// ignores.
const heartbeatComment = ": heartbeat\n\n"

// streamWriteTimeout is how long a client has to take each write of a
// stream (a batch of events, a heartbeat): the write deadline moves this
// far ahead before each one, so that only a client that stops reading is
// cut off, never a stream that merely lasts.
const streamWriteTimeout = 30 * time.Second

// stream answers the feed as server-sent events (Accept:
// text/event-stream): each change an event whose id is its cursor, whose
// event is its type and whose data is the change's JSON (as in a page).
// It starts after the Last-Event-ID header when the client sent one (an
// SSE client resuming), else after q.after, and runs until the client
// leaves or the server shuts down, reading the log as poll waits
// on it. A bad or gone cursor, or a failing store, is answered with its
// Error before the stream starts; a failure once events are out ends the
// stream, and the client's reconnection gets the answer.
func (f *Feed) stream(w http.ResponseWriter, r *http.Request, q changesQuery) {
	ctx := r.Context()
	after := q.after
	if n := len(r.Header["Last-Event-Id"]); n > 1 { // as a repeated query parameter: never a guess which one counts
		httperr.Write(w, http.StatusBadRequest, `header "Last-Event-ID" is given `+strconv.Itoa(n)+" times; give it at most once")
		return
	}
	resume := q.resume
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		// A reconnection goes on from its last event, in a snapshot or
		// after it, whatever the query (an EventSource sends the same).
		q.snapshot, resume = false, nil
		if c, ok := parseSnapshotCursor(id); ok {
			resume = &c
		} else {
			var err error
			if after, err = ParseCursor(`header "Last-Event-ID"`, id); err != nil {
				httperr.Write(w, http.StatusBadRequest, err.Error())
				return
			}
		}
	}
	snapshotting := q.snapshot || resume != nil
	var (
		records []changes.Record
		step    changes.SnapshotStep
		err     error
	)
	wake := f.changes.Wait()
	if snapshotting {
		var from changes.SnapshotPosition
		if from, err = snapshotFrom(q, resume); err != nil {
			httperr.Write(w, http.StatusBadRequest, err.Error())
			return
		}
		step, err = changes.ReadSnapshot(ctx, f.changes, from, q.filter, q.limit, time.Now())
	} else {
		records, err = f.changes.Changes(ctx, after, q.limit)
	}
	if err != nil {
		f.readError(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	header := w.Header()
	header.Set("Content-Type", "text/event-stream")
	header.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	poll := time.NewTicker(changesPoll)
	defer poll.Stop()
	heartbeat := time.NewTicker(changesHeartbeat)
	defer heartbeat.Stop()
	buf := getBuffer()
	defer putBuffer(buf)
	if snapshotting {
		if after, err = f.streamSnapshot(r, q, step, send, buf); err == nil {
			wake = f.changes.Wait()
			records, err = f.changes.Changes(ctx, after, q.limit)
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, errStreamGone) {
				f.logStreamEnd(r, err)
			}
			return
		}
	}
	// A filtered stream reads past the changes its filter does not keep;
	// sent is the cursor of its last event, and a bookmark tells the
	// client when it has read further (so that a reconnection resumes
	// there), and each heartbeat is a bookmark too.
	filtered := !q.filter.IsZero()
	sent := after
	beat := func() bool { return send([]byte(heartbeatComment)) }
	if filtered {
		beat = func() bool {
			sent = after
			return send(appendBookmark(nil, after))
		}
	}
	for first := true; ; first = false {
		read := len(records)
		if filtered && read > 0 {
			readTo := records[read-1].Cursor
			records = filterRecords(records, q.filter)
			after = readTo
		}
		if len(records) > 0 || first || after != sent { // the first flush sends the headers: the client knows the stream is open
			buf.Reset()
			for _, rec := range records {
				buf.Write(appendEvent(buf.AvailableBuffer(), rec))
				sent = rec.Cursor
			}
			if !filtered {
				after = sent
			} else if after != sent {
				buf.Write(appendBookmark(buf.AvailableBuffer(), after))
				sent = after
			}
			if !send(buf.Bytes()) {
				return
			}
		}
		if read < q.limit { // a full batch: more may be waiting already
			if !f.awaitChange(wake, poll, heartbeat, ctx.Done(), beat) {
				return
			}
		}
		wake = f.changes.Wait()
		if records, err = f.changes.Changes(ctx, after, q.limit); err != nil {
			if ctx.Err() == nil {
				f.logStreamEnd(r, err)
			}
			return
		}
	}
}

// awaitChange blocks until the log may hold a change past the stream's
// cursor (a commit woke it, or a poll came due), sending a heartbeat each
// time one is due; false when the stream must end: the client left, a
// write failed, or the server is shutting down.
func (f *Feed) awaitChange(wake <-chan struct{}, poll, heartbeat *time.Ticker, gone <-chan struct{}, beat func() bool) bool {
	for {
		select {
		case <-wake:
			return f.gather(gone) // with the changes committed right after
		case <-poll.C:
			return true
		case <-heartbeat.C:
			if !beat() {
				return false
			}
		case <-gone:
			return false
		case <-f.stopping:
			return false
		}
	}
}

// appendEvent appends one change as a server-sent event.
func appendEvent(b []byte, rec changes.Record) []byte {
	b = append(b, "id: "...)
	b = append(b, EncodeCursor(rec.Cursor)...)
	b = append(b, "\nevent: "...)
	b = append(b, rec.Kind.String()...)
	b = append(b, "\ndata: "...)
	b = appendChange(b, rec)
	return append(b, "\n\n"...)
}

// appendBookmark appends a bookmark: an event of no change whose id is
// the cursor a filtered stream has read to, and whose data is
// {"cursor":"<cursor>"}.
func appendBookmark(b []byte, c changes.Cursor) []byte {
	cursor := EncodeCursor(c)
	b = append(b, "id: "...)
	b = append(b, cursor...)
	b = append(b, "\nevent: bookmark\ndata: {\"cursor\":\""...)
	b = append(b, cursor...)
	return append(b, "\"}\n\n"...)
}

// logStreamEnd logs a stream ended by a failed read of the log.
func (f *Feed) logStreamEnd(r *http.Request, err error) {
	level := zap.WarnLevel
	if errors.Is(err, changes.ErrCursorGone) || errors.Is(err, changes.ErrCursorUnknown) {
		level = zap.InfoLevel
	}
	f.log.Log(level, "change stream ended by a failed read; the client reconnects", requestFields(r, err)...)
}

// errStreamGone says a stream's write failed: the client left.
var errStreamGone = errors.New("the stream's client left")

// streamSnapshot sends a snapshot's events from its first page (step) to
// its end, then the snapshot-end event, and returns the cursor the stream
// goes on from.
func (f *Feed) streamSnapshot(r *http.Request, q changesQuery, step changes.SnapshotStep, send func([]byte) bool, buf *bytes.Buffer) (changes.Cursor, error) {
	ctx := r.Context()
	tag := digestTag(q.filter.Tag)
	for {
		buf.Reset()
		for _, it := range step.Items {
			buf.Write(appendSnapshotEvent(buf.AvailableBuffer(), it, tag))
		}
		if step.Done {
			buf.Write(appendSnapshotEnd(buf.AvailableBuffer(), step.Next.Cursor))
		}
		if !send(buf.Bytes()) {
			return changes.Cursor{}, errStreamGone
		}
		if step.Done {
			break
		}
		select {
		case <-f.stopping:
			return changes.Cursor{}, errStreamGone
		default:
		}
		var err error
		if step, err = changes.ReadSnapshot(ctx, f.changes, step.Next, q.filter, q.limit, time.Now()); err != nil {
			return changes.Cursor{}, err
		}
	}
	return step.Next.Cursor, nil
}
