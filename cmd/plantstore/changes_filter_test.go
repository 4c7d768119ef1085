package main

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
)

// TestChangeFeedFilters runs the feed's filters and after=now in the real
// app on every store: a bad filter is a 400 on every form; after=now starts at the listing's head; a tag filter
// gives a plant's arrival in the tag and its leaving (as a deletion); a
// follower whose filter matches nothing while other writes run gets a
// next at the head, and its stream a bookmark there.
func TestChangeFeedFilters(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		if cfg.Plants.Store == plants.StorePostgres {
			// A cluster of its own, as TestChangeFeed's.
			cfg.Plants.Postgres.URL = pgtest.NewCluster(t).NewDatabase(t)
		}
		s := startServer(t, cfg)
		get := func(path string) (response, feedPage) {
			r := s.do(t, s.request(t, http.MethodGet, path, testToken, "", nil))
			var page feedPage
			r.JSON(t, &page)
			if r.Status != http.StatusOK {
				t.Fatalf("GET %s = %d %s", path, r.Status, r.Body)
			}
			return r, page
		}
		headCursor := func() string {
			return s.do(t, s.request(t, http.MethodGet, "/plants", testToken, "", nil)).Header.Get("Plantstore-Changes-Cursor")
		}
		write := func(method, path, body string) {
			t.Helper()
			ct := ""
			if body != "" {
				ct = "application/json"
			}
			if r := s.do(t, s.request(t, method, path, testToken, ct, []byte(body))); r.Status/100 != 2 {
				t.Fatalf("%s %s = %d %s", method, path, r.Status, r.Body)
			}
		}
		// A bad filter is a 400 with the Error body, as a page, a long poll
		// and a stream alike (each answer validated against the OpenAPI
		// document).
		for query, msg := range map[string]string{
			"tag=":                              `query parameter \"tag\" must not be empty`,
			"tag=a&tag=a":                       `query parameter \"tag\" is given 2 times; give it at most once`,
			"types=plant.moved":                 `query parameter \"types\" must list event types from plant.created, plant.updated, plant.deleted, comma-separated, not \"plant.moved\"`,
			"types=plant.created,plant.created": `query parameter \"types\" lists \"plant.created\" twice`,
			"types=a,b,c,d":                     `query parameter \"types\" lists 4 types; there are 3: plant.created, plant.updated, plant.deleted`,
			"tag=a&types=plant.deleted&types=plant.created": `query parameter \"types\" is given 2 times; give it at most once`,
		} {
			for _, form := range []struct{ query, accept string }{{"", ""}, {"&wait=30s", ""}, {"", "text/event-stream"}} {
				req := s.request(t, http.MethodGet, "/plants/changes?"+query+form.query, testToken, "", nil)
				if form.accept != "" {
					req.Header.Set("Accept", form.accept)
				}
				if r := s.do(t, req); r.Status != http.StatusBadRequest || string(r.Body) != `{"error":400,"message":"`+msg+`"}` {
					t.Errorf("GET /plants/changes?%s%s (Accept %q) = %d %s, want 400 %s", query, form.query, form.accept, r.Status, r.Body, msg)
				}
			}
		}
		write(http.MethodPost, "/plants", `{"id":1,"name":"Fern"}`)
		if _, page := get("/plants/changes?after=now"); len(page.Changes) != 0 || page.Next != headCursor() {
			t.Fatalf("after=now: %+v, want nothing and next %q", page, headCursor())
		}
		_, start := get("/plants/changes?after=now")
		write(http.MethodPut, "/plants/1", `{"name":"Fern","tag":"green"}`)
		write(http.MethodPost, "/plants", `{"id":2,"name":"Ivy"}`)
		write(http.MethodPut, "/plants/1", `{"name":"Fern","tag":"blue"}`)
		_, page := get("/plants/changes?tag=green&after=" + start.Next)
		if len(page.Changes) != 2 || page.Changes[0].Type != "plant.updated" || page.Changes[0].ID != 1 ||
			page.Changes[1].Type != "plant.deleted" || page.Changes[1].ID != 1 || page.Changes[1].Plant != nil || page.Next != headCursor() {
			t.Fatalf("tag green: %+v, want plant 1 arriving then leaving, next at the head", page)
		}
		// A quiet filter: nothing deleted while creates and updates run.
		for range 3 {
			write(http.MethodPut, "/plants/2", `{"name":"Ivy","tag":"x"}`)
			write(http.MethodPut, "/plants/2", `{"name":"Ivy"}`)
		}
		if _, quiet := get("/plants/changes?types=plant.deleted&limit=2&wait=1s&after=" + start.Next); len(quiet.Changes) != 0 || quiet.Next != headCursor() {
			t.Fatalf("a quiet filter's long poll: %+v, want nothing and next at the head %q", quiet, headCursor())
		}
		req := s.request(t, http.MethodGet, "/plants/changes?types=plant.deleted&after="+page.Next, testToken, "", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		events := bufio.NewReader(resp.Body)
		var got string
		for !strings.HasSuffix(got, "\n\n") {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %q, %v", got, err)
			}
			got += line
		}
		head := headCursor()
		if want := "id: " + head + "\nevent: bookmark\ndata: {\"cursor\":\"" + head + "\"}\n\n"; got != want {
			t.Fatalf("a quiet filter's stream: %q, want %q", got, want)
		}
	})
}
