package plants

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newFeedAPI serves the handlers' routes and the change feed's, following
// log, through the real router; stopping stands for the server's shutdown.
func newFeedAPI(tb testing.TB, store plant.Store, log changes.ChangeLog, stopping <-chan struct{}) http.Handler {
	tb.Helper()
	h, err := NewHandlers(store, log, DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		tb.Fatal(err)
	}
	rt := httpserver.NewRouter(append(h.Routes(), NewFeed(log, stopping, zap.NewNop()).Routes()...))
	return rt.Resolve(rt.Dispatch())
}

// failingLog is a change log whose reads fail with err; the feed's error
// paths need it, since no real store fails on demand.
type failingLog struct{ err error }

func (l failingLog) Changes(context.Context, changes.Cursor, int) ([]changes.Record, error) {
	return nil, l.err
}
func (l failingLog) Head(context.Context) (changes.Cursor, error) { return changes.Cursor{}, l.err }
func (failingLog) Wait() <-chan struct{}                          { return nil }
func (l failingLog) Snapshot(context.Context, changes.SnapshotQuery) (changes.Snapshot, error) {
	return changes.Snapshot{}, l.err
}
func (failingLog) PruneChanges(context.Context, time.Time) (int, error) {
	return 0, errors.New("not pruned here")
}

// serveWith sends a GET of target with the header h (name, value pairs).
func serveWith(api http.Handler, target string, h ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	return w
}

const eventStream = "text/event-stream"

// TestChangesRefusesBadQueries: each malformed parameter is a 400 naming
// it, decided before the log is read (the log here would fail otherwise),
// as a page and as a stream alike.
func TestChangesRefusesBadQueries(t *testing.T) {
	api := newFeedAPI(t, memstore.New(), failingLog{errors.New("the log was read")}, nil)
	const seen = `(a page's \"next\", an event's id, or a Plantstore-Changes-Cursor header)`
	for target, msg := range map[string]string{
		"/plants/changes?after=":                                   `query parameter \"after\" must be a cursor this API gave ` + seen + `, not \"\"`,
		"/plants/changes?after=xyz":                                `query parameter \"after\" must be a cursor this API gave ` + seen + `, not \"xyz\"`,
		"/plants/changes?after=AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR==": `query parameter \"after\" must be a cursor this API gave ` + seen + `, not \"AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR==\"`,
		"/plants/changes?after=AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR+":  `query parameter \"after\" must be a cursor this API gave ` + seen + `, not \"AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR \"`,
		"/plants/changes?after=AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAA+":   `query parameter \"after\" must be a cursor this API gave ` + seen + `, not \"AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAA \"`,
		"/plants/changes?after=AAAAAAAAAAAAAAAAAAAAEQ":             `query parameter \"after\" must be a cursor this API gave ` + seen + `, not \"AAAAAAAAAAAAAAAAAAAAEQ\"`,           // an earlier build's
		"/plants/changes?after=AAAAAAAAXu0AAAAAAAAAAP__________":   `query parameter \"after\" must be a cursor this API gave ` + seen + `, not \"AAAAAAAAXu0AAAAAAAAAAP__________\"`, // a negative version
		"/plants/changes?after=a&after=b":                          `query parameter \"after\" is given 2 times; give it at most once`,
		"/plants/changes?limit=0":                                  `query parameter \"limit\" must be from 1 to 1000, not 0`,
		"/plants/changes?limit=1001":                               `query parameter \"limit\" must be from 1 to 1000, not 1001`,
		"/plants/changes?limit=+5":                                 `query parameter \"limit\" must be an integer from 1 to 1000, not \" 5\"`,
		"/plants/changes?wait=30":                                  `query parameter \"wait\" must be a duration from 0s to 1m0s such as \"30s\", not \"30\"`,
		"/plants/changes?wait=61s":                                 `query parameter \"wait\" must be a duration from 0s to 1m0s such as \"30s\", not \"61s\"`,
		"/plants/changes?wait=-1s":                                 `query parameter \"wait\" must be a duration from 0s to 1m0s such as \"30s\", not \"-1s\"`,
		"/plants/changes?wait=1s&wait=2s":                          `query parameter \"wait\" is given 2 times; give it at most once`,
		"/plants/changes?limit=5&limit=6":                          `query parameter \"limit\" is given 2 times; give it at most once`,
		"/plants/changes?wait=%00":                                 `query parameter \"wait\" must not contain the character U+0000`,
		"/plants/changes?wait=%":                                   `query string is malformed: invalid URL escape \"%\"`,
	} {
		for _, accept := range []string{"", eventStream} {
			assertAnswer(t, serveWith(api, target, "Accept", accept), http.StatusBadRequest, `{"error":400,"message":"`+msg+`"}`)
		}
	}
	// A stream resumes from Last-Event-ID, which must be a cursor too.
	assertAnswer(t, serveWith(api, "/plants/changes", "Accept", eventStream, "Last-Event-ID", "17"), http.StatusBadRequest,
		`{"error":400,"message":"header \"Last-Event-ID\" must be a cursor this API gave `+seen+`, not \"17\""}`)
	// Given twice, it is refused as a repeated parameter is, whatever the
	// values: a proxy in front may read the other one.
	req := httptest.NewRequest(http.MethodGet, "/plants/changes", nil)
	req.Header.Set("Accept", eventStream)
	req.Header.Add("Last-Event-ID", "AAAAAAAAAAAAAAAAAAAAEQ")
	req.Header.Add("Last-Event-ID", "AAAAAAAAAAAAAAAAAAAAEQ")
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	assertAnswer(t, w, http.StatusBadRequest, `{"error":400,"message":"header \"Last-Event-ID\" is given 2 times; give it at most once"}`)
}

// TestChangesCursorGone: a cursor older than the retention window is a 410
// that tells the client what to do, before any stream starts.
func TestChangesCursorGone(t *testing.T) {
	api := newFeedAPI(t, memstore.New(), failingLog{changes.ErrCursorGone}, nil)
	const gone = `{"error":410,"message":"the cursor is older than the change log's retention window: list the plants again (GET /plants) and follow the changes from the listing's Plantstore-Changes-Cursor header"}`
	for _, target := range []string{"/plants/changes", "/plants/changes?after=AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR&wait=30s"} {
		assertAnswer(t, serveWith(api, target), http.StatusGone, gone)
		assertAnswer(t, serveWith(api, target, "Accept", eventStream), http.StatusGone, gone)
	}
	assertAnswer(t, serveWith(api, "/plants/changes", "Accept", "text/html, text/event-stream;q=0.9", "Last-Event-ID", "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR"), http.StatusGone, gone)
}

// TestChangesCursorUnknown: a cursor the store's history does not hold
// (another store's, or one a restored copy never wrote) is a 410 too, with
// the same way on, before any stream starts.
func TestChangesCursorUnknown(t *testing.T) {
	api := newFeedAPI(t, memstore.New(), failingLog{changes.ErrCursorUnknown}, nil)
	const unknown = `{"error":410,"message":"the cursor is not one of this store's history (another store's, or given after the backup this store was restored from): list the plants again (GET /plants) and follow the changes from the listing's Plantstore-Changes-Cursor header"}`
	for _, target := range []string{"/plants/changes?after=AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR", "/plants/changes?after=AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR&wait=30s"} {
		assertAnswer(t, serveWith(api, target), http.StatusGone, unknown)
		assertAnswer(t, serveWith(api, target, "Accept", eventStream), http.StatusGone, unknown)
	}
	assertAnswer(t, serveWith(api, "/plants/changes", "Accept", eventStream, "Last-Event-ID", "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR"), http.StatusGone, unknown)
}

// TestChangesStoreFailures: the feed and the listing's cursor fail as every
// read does: 503 with Retry-After while the store is unreachable, 500 with
// nothing of the cause otherwise.
func TestChangesStoreFailures(t *testing.T) {
	for _, target := range []string{"/plants/changes", "/plants/changes?wait=30s", "/plants"} {
		for _, accept := range []string{"", eventStream} {
			down := newFeedAPI(t, memstore.New(), failingLog{errors.Join(plant.ErrUnavailable, errors.New("dial tcp: refused"))}, nil)
			w := serveWith(down, target, "Accept", accept)
			assertAnswer(t, w, http.StatusServiceUnavailable, `{"error":503,"message":"the plant store is unavailable; retry later"}`)
			if got := w.Header().Get("Retry-After"); got != "1" {
				t.Fatalf("GET %s: Retry-After = %q, want 1", target, got)
			}
			broken := newFeedAPI(t, memstore.New(), failingLog{errors.New("disk on fire")}, nil)
			w = serveWith(broken, target, "Accept", accept)
			assertAnswer(t, w, http.StatusInternalServerError, `{"error":500,"message":"internal error"}`)
			if got := w.Header().Values(ChangesCursorHeader); len(got) != 0 {
				t.Fatalf("GET %s failed with a %s header %q", target, ChangesCursorHeader, got)
			}
		}
	}
}

// TestChangesWithoutALog: handlers given no change log answer the feed 404
// (its path is still not taken for a plant id) and list without a cursor.
func TestChangesWithoutALog(t *testing.T) {
	api := newTestAPI(t, memstore.New())
	assertAnswer(t, serve(api, http.MethodGet, "/plants/changes"), http.StatusNotFound, `{"error":404,"message":"this server keeps no change log"}`)
	w := serve(api, http.MethodGet, "/plants")
	assertAnswer(t, w, http.StatusOK, `[]`)
	if got := w.Header().Values(ChangesCursorHeader); len(got) != 0 {
		t.Fatalf("%s = %q without a change log", ChangesCursorHeader, got)
	}
}

// TestCursorText: a cursor's text is base64url without padding of
// History, Tx and Version, big-endian, and reads back as it was.
func TestCursorText(t *testing.T) {
	for c, text := range map[changes.Cursor]string{
		{}:                                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		{History: 0x5eed, Version: 17}:    "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAR",
		{History: 1, Tx: 1, Version: 255}: "AAAAAAAAAAEAAAAAAAAAAQAAAAAAAAD_",
		{History: 1<<64 - 1, Tx: 1<<64 - 1, Version: 1<<63 - 1}: "_____________________3__________",
	} {
		if got := EncodeCursor(c); got != text {
			t.Errorf("EncodeCursor(%+v) = %q, want %q", c, got, text)
		}
		if got, err := ParseCursor("c", text); err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", text, got, err, c)
		}
	}
}
