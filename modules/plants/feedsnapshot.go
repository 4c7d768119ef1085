package plants

import (
	"net/http"
	"slices"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// The feed's snapshot (snapshot=true): every current plant as a synthetic
// plant.created, then the changes, in one call (a stream) or one page
// after another (see changes.ReadSnapshot, which reads it for both). While
// it is read, a page's next and an event's id are snapshot cursors
// (feedsnapshotcursor.go); the page that ends it says "snapshot":
// "complete" and its next is the change cursor the feed goes on from, and
// a stream sends a snapshot-end event with that cursor.

// Page fields saying where a snapshot stands.
const (
	snapshotPartial  = "partial"
	snapshotComplete = "complete"
)

// snapshotFrom checks that q may read or resume a snapshot and returns
// where it starts; a *badRequestError when its filter does not fit.
func snapshotFrom(q changesQuery, resume *snapshotCursor) (changes.SnapshotPosition, error) {
	if len(q.filter.Kinds) > 0 && !slices.Contains(q.filter.Kinds, changes.Created) {
		return changes.SnapshotPosition{}, badRequest(`query parameter "types" must list plant.created with a snapshot: its plants are given as plant.created`)
	}
	if resume == nil {
		return changes.SnapshotPosition{}, nil
	}
	if resume.tag != digestTag(q.filter.Tag) {
		return changes.SnapshotPosition{}, badRequest(`query parameter "tag" must be the one the snapshot was started with: a snapshot cursor goes on only with its own tag filter`)
	}
	return resume.pos, nil
}

// snapshotPage answers one page of a snapshot: its plants and changes, and
// where it stands. A snapshot's page never waits: it holds plants, or it
// is the last one.
func (f *Feed) snapshotPage(w http.ResponseWriter, r *http.Request, q changesQuery) {
	from, err := snapshotFrom(q, q.resume)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	step, err := changes.ReadSnapshot(r.Context(), f.changes, from, q.filter, q.limit, time.Now())
	if err != nil {
		f.readError(w, r, err)
		return
	}
	tag := digestTag(q.filter.Tag)
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(`{"changes":[`)
	for i, it := range step.Items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(appendSnapshotItem(buf.AvailableBuffer(), it, tag))
	}
	buf.WriteString(`],"next":"`)
	state := snapshotPartial
	if step.Done {
		buf.WriteString(EncodeCursor(step.Next.Cursor))
		state = snapshotComplete
	} else {
		buf.WriteString(encodeSnapshotCursor(step.Next, tag))
	}
	buf.WriteString(`","snapshot":"`)
	buf.WriteString(state)
	buf.WriteString(`"}`)
	writeJSON(w, http.StatusOK, buf.Bytes())
}

// appendSnapshotItem appends one item of a snapshot as a change whose
// cursor resumes the snapshot after it; a plant of the snapshot carries
// "snapshot":true.
func appendSnapshotItem(b []byte, it changes.SnapshotItem, tag tagDigest) []byte {
	return appendChangeAt(b, encodeSnapshotCursor(it.After, tag), it.Record, it.Synthetic)
}

// appendSnapshotEvent appends one item of a snapshot as a server-sent
// event, its id the snapshot cursor after it.
func appendSnapshotEvent(b []byte, it changes.SnapshotItem, tag tagDigest) []byte {
	b = append(b, "id: "...)
	b = append(b, encodeSnapshotCursor(it.After, tag)...)
	b = append(b, "\nevent: "...)
	b = append(b, it.Record.Kind.String()...)
	b = append(b, "\ndata: "...)
	b = appendSnapshotItem(b, it, tag)
	return append(b, "\n\n"...)
}

// appendSnapshotEnd appends the event that ends a stream's snapshot: its id
// and data's cursor are where the changes go on from.
func appendSnapshotEnd(b []byte, c changes.Cursor) []byte {
	cursor := EncodeCursor(c)
	b = append(b, "id: "...)
	b = append(b, cursor...)
	b = append(b, "\nevent: snapshot-end\ndata: {\"cursor\":\""...)
	b = append(b, cursor...)
	return append(b, "\"}\n\n"...)
}
