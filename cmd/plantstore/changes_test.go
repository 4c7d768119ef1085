package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants"
)

// feedPage is a page of the change feed as the tests read it.
type feedPage struct {
	Changes []struct {
		Cursor    string         `json:"cursor"`
		Type      string         `json:"type"`
		ID        int64          `json:"id"`
		Version   int64          `json:"version"`
		Timestamp string         `json:"timestamp"`
		Plant     map[string]any `json:"plant"`
	} `json:"changes"`
	Next string `json:"next"`
}

var feedTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// TestChangeFeed runs the feed in the real app on every store: a listing's
// cursor, the changes after it (each
// answer validated against the OpenAPI document), a long poll answered by
// a create, and a stream that ends cleanly when the server stops, without
// holding the stop for its timeout.
func TestChangeFeed(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		if cfg.Plants.Store == plants.StorePostgres {
			// A cluster of its own: the feed shows a change once no older
			// write transaction of the cluster is open (pgstore's
			// changelog.go), and on the shared cluster other tests write
			// at the same time, holding back what the reads right after
			// each write here must see. (The shared cluster's database
			// that storeConfig gave it goes back to pgtest unused.)
			cfg.Plants.Postgres.URL = pgtest.NewCluster(t).NewDatabase(t)
		}
		testChangeFeed(t, cfg)
	})
}

func testChangeFeed(t *testing.T, cfg config) {
	cfg.HTTP.ShutdownTimeout = 10 * time.Second // a stream holding the stop fails the test after this
	s := startServer(t, cfg)
	get := func(path string) response {
		return s.do(t, s.request(t, http.MethodGet, path, testToken, "", nil))
	}
	list := get("/plants")
	start := list.Header.Get("Plantstore-Changes-Cursor")
	if list.Status != http.StatusOK || len(start) != 32 {
		t.Fatalf("GET /plants = %d, cursor %q", list.Status, start)
	}
	if r := s.post(t, `{"id":1,"name":"Monstera"}`); r.Status != http.StatusOK {
		t.Fatalf("create = %d", r.Status)
	}
	if r := s.do(t, s.request(t, http.MethodPut, "/plants/1", testToken, "application/json", []byte(`{"name":"Monstera","tag":"big"}`))); r.Status != http.StatusOK {
		t.Fatalf("update = %d %s", r.Status, r.Body)
	}
	if r := s.do(t, s.request(t, http.MethodDelete, "/plants/1", testToken, "", nil)); r.Status != http.StatusNoContent {
		t.Fatalf("delete = %d", r.Status)
	}
	r := get("/plants/changes?after=" + start)
	var page feedPage
	r.JSON(t, &page)
	if r.Status != http.StatusOK || len(page.Changes) != 3 {
		t.Fatalf("the changes after the listing: %d %s", r.Status, r.Body)
	}
	wantPlants := []string{`map[id:1 name:Monstera]`, `map[id:1 name:Monstera tag:big]`, `map[]`}
	for i, typ := range []string{"plant.created", "plant.updated", "plant.deleted"} {
		ch := page.Changes[i]
		if ch.Type != typ || ch.ID != 1 || !feedTimestamp.MatchString(ch.Timestamp) || len(ch.Cursor) != 32 || fmt.Sprint(ch.Plant) != wantPlants[i] ||
			(i > 0 && (ch.Version <= page.Changes[i-1].Version || !feedCursor(t, page.Changes[i-1].Cursor).Less(feedCursor(t, ch.Cursor)))) {
			t.Fatalf("change %d: %+v in %s", i, ch, r.Body)
		}
	}
	if page.Next != page.Changes[2].Cursor {
		t.Fatalf("next %q, want the last change's cursor %q", page.Next, page.Changes[2].Cursor)
	}
	if r := get("/plants"); r.Header.Get("Plantstore-Changes-Cursor") != page.Next {
		t.Fatalf("the listing's cursor after the changes: %q, want %q", r.Header.Get("Plantstore-Changes-Cursor"), page.Next)
	}

	// A long poll answered by a create.
	polled := make(chan response, 1)
	go func() { polled <- get("/plants/changes?wait=30s&after=" + page.Next) }()
	if r := s.post(t, `{"id":2,"name":"Fern"}`); r.Status != http.StatusOK {
		t.Fatalf("create = %d", r.Status)
	}
	r = <-polled
	var next feedPage
	r.JSON(t, &next)
	if r.Status != http.StatusOK || len(next.Changes) != 1 || next.Changes[0].Type != "plant.created" || next.Changes[0].ID != 2 {
		t.Fatalf("the long poll: %d %s", r.Status, r.Body)
	}

	// A stream from the start: the four changes, then the stop ends it.
	req := s.request(t, http.MethodGet, "/plants/changes?after="+start, testToken, "", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := bufio.NewReader(resp.Body)
	var ids []string
	for len(ids) < 4 {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("stream after %d events: %v", len(ids), err)
		}
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, strings.TrimSuffix(id, "\n"))
		}
	}
	if want := []string{page.Changes[0].Cursor, page.Changes[1].Cursor, page.Changes[2].Cursor, next.Changes[0].Cursor}; strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("stream ids %q, want %q", ids, want)
	}
	// A connection the client dialed but never used (one raced the long
	// poll's for the create) counts as active for http.Server.Shutdown for
	// 5 seconds, as startServer's cleanup says; the stop is to wait for
	// the stream alone.
	s.Client.CloseIdleConnections()
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopped <- s.app.Stop(ctx)
	}()
	rest, err := io.ReadAll(events)
	if err != nil || string(rest) != "event: plant.created\ndata: "+string(mustChangeJSON(t, r.Body))+"\n\n" {
		t.Fatalf("the stream's end: %q, %v; want the last event's rest, then a clean end", rest, err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop with a stream open: %v", err)
	}
}

// feedCursor reads a cursor's text. The text is opaque and its order is
// not the cursors' order (base64url's alphabet is not in byte order: the
// text of PostgreSQL transaction 0x2dd has "t0" where 0x2db's has "ts",
// so the later transaction's text sorts first), so tests compare what it
// decodes to.
func feedCursor(t *testing.T, s string) changes.Cursor {
	t.Helper()
	c, err := plants.ParseCursor("cursor", s)
	if err != nil {
		t.Fatalf("cursor %q: %v", s, err)
	}
	return c
}

// mustChangeJSON is the one change of a page's body, as the page wrote it.
func mustChangeJSON(t *testing.T, page []byte) []byte {
	t.Helper()
	s := string(page)
	start, end := strings.Index(s, `[`), strings.LastIndex(s, `]`)
	if start < 0 || end < start {
		t.Fatalf("not a page: %s", page)
	}
	return []byte(s[start+1 : end])
}
