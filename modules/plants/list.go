package plants

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"

	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Page sizes of GET /plants. A limit over the maximum is refused, not
// clamped: a client that asked for 5000 plants and quietly got 1000 could
// take the short page for the whole list.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// list handles GET /plants: one page of plants in ascending id order, and a
// Link header to the next page while more plants remain. Paging is by key
// (the after cursor), so a page deep in the list costs what the first does,
// and a client walking the pages sees every plant that exists throughout
// its walk exactly once, whatever others create or delete meanwhile.
// Every page carries the change log's head taken before the page was read
// (Plantstore-Changes-Cursor): a copy built from the pages, then updated by
// the changes after the first page's cursor, misses nothing.
func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	q, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	var head string
	if h.changeLog != nil {
		cursor, err := h.changeLog.Head(r.Context())
		if err != nil {
			h.storeError(w, r, err, 0)
			return
		}
		head = EncodeCursor(cursor)
	}
	pageSize := q.Limit
	q.Limit++ // the one plant past the page says whether another page follows
	plants, err := h.store.List(r.Context(), q)
	if err != nil {
		h.storeError(w, r, err, 0)
		return
	}
	if len(plants) > pageSize {
		plants = plants[:pageSize]
		w.Header().Set("Link", nextLink(plants[pageSize-1].ID, pageSize, q.Tag))
	}
	if head != "" {
		w.Header().Set(ChangesCursorHeader, head)
	}
	buf := getBuffer()
	defer putBuffer(buf)
	writePlantList(buf, plants)
	writeJSON(w, http.StatusOK, buf.Bytes())
}

// parseListQuery reads limit, after and tag from a raw query string. Other
// parameters are ignored. A malformed query string, a parameter given more
// than once (which value would the client mean?), or a value out of its
// range, not in canonical decimal, not valid UTF-8 or holding U+0000 is a
// *badRequestError naming the parameter, so no store sees it. An empty tag
// (tag=) selects the plants whose tag is the empty string, not the
// untagged ones.
func parseListQuery(raw string) (plant.ListQuery, error) {
	q := plant.ListQuery{Limit: defaultListLimit}
	if raw == "" {
		return q, nil
	}
	values, err := parseQuery(raw, "limit", "after", "tag")
	if err != nil {
		return q, err
	}
	if v, ok := values["limit"]; ok {
		if q.Limit, err = parseLimit(v[0]); err != nil {
			return q, err
		}
	}
	if v, ok := values["after"]; ok {
		after, err := parseID(`query parameter "after"`, v[0])
		if err != nil {
			return q, err
		}
		q.After = &after
	}
	if v, ok := values["tag"]; ok {
		q.Tag = &v[0]
	}
	return q, nil
}

var limitRange = "from 1 to " + strconv.Itoa(maxListLimit)

// parseLimit parses limit in canonical decimal, as ids are (isCanonicalInt).
func parseLimit(s string) (int, error) {
	if !isCanonicalInt(s) {
		return 0, notCanonical(`query parameter "limit" must be an integer `+limitRange, s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > maxListLimit { // canonical digits: err is ErrRange, beyond int64, so out of range too
		return 0, badRequest(`query parameter "limit" must be ` + limitRange + ", not " + clip(s))
	}
	return int(n), nil
}

// nextLink is the Link header value for the page after the plant last,
// repeating the request's limit and tag so that following it needs nothing
// else. The tag is query-escaped, so it cannot break out of the <...>.
func nextLink(last int64, limit int, tag *string) string {
	b := make([]byte, 0, 64)
	b = append(b, "</plants?after="...)
	b = strconv.AppendInt(b, last, 10)
	b = append(b, "&limit="...)
	b = strconv.AppendInt(b, int64(limit), 10)
	if tag != nil {
		b = append(b, "&tag="...)
		b = append(b, url.QueryEscape(*tag)...)
	}
	b = append(b, `>; rel="next"`...)
	return string(b)
}

// writePlantList writes plants as a JSON array of {id, name, tag?}. Each
// plant is appended to the buffer's spare room (the idiom AvailableBuffer
// exists for), so a pooled buffer grows once and is reused.
func writePlantList(buf *bytes.Buffer, plants []plant.Plant) {
	buf.WriteByte('[')
	for i, p := range plants {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(appendStoredPlant(buf.AvailableBuffer(), p))
	}
	buf.WriteByte(']')
}
