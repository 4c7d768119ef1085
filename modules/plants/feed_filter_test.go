package plants

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// deleted1 is changeScript's update of plant 1 out of any other tag, as a
// tag filter gives it: the plant's deletion.
const deleted1 = `{"cursor":"` + cursor3 + `","type":"plant.deleted","id":1,"version":3,"timestamp":"2000-01-01T00:00:02.500Z"}`

// TestChangesFilteredPages: a filter keeps the changes it asks for, a tag
// filter gives a change out of the tag as a deletion, and a page's next is
// the last change read, kept or not.
func TestChangesFilteredPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		api := newFeedAPI(t, store, store, nil)
		changeScript(t, store)
		for target, body := range map[string]string{
			"/plants/changes?tag=green":                                      `{"changes":[` + created2 + `,` + deleted1 + `,` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?tag=%22shade%22":                                `{"changes":[` + updated1 + `,` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?tag=other":                                      `{"changes":[` + deleted1 + `,` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?types=plant.created":                            `{"changes":[` + created1 + `,` + created2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?types=plant.deleted,plant.updated":              `{"changes":[` + updated1 + `,` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?types=plant.updated,plant.deleted&limit=1":      emptyPage + cursor1 + `"}`,
			"/plants/changes?types=plant.created&after=" + cursor2:           emptyPage + cursor4 + `"}`,
			"/plants/changes?tag=green&types=plant.created":                  `{"changes":[` + created2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?tag=green&types=plant.deleted&after=" + cursor3: `{"changes":[` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?after=now":                                      emptyPage + cursor4 + `"}`,
			"/plants/changes?after=now&tag=green":                            emptyPage + cursor4 + `"}`,
		} {
			assertAnswer(t, serve(api, http.MethodGet, target), http.StatusOK, body)
		}
	})
}

// TestChangesRefusesBadFilters: each bad filter is a 400 naming its
// parameter, decided before the log is read (the log here would fail
// otherwise), as a page, a long poll and a stream alike.
func TestChangesRefusesBadFilters(t *testing.T) {
	api := newFeedAPI(t, memstore.New(), failingLog{errors.New("the log was read")}, nil)
	const types = `plant.created, plant.updated, plant.deleted`
	for target, msg := range map[string]string{
		"/plants/changes?tag=":                                                          `query parameter \"tag\" must not be empty`,
		"/plants/changes?tag=a&tag=b":                                                   `query parameter \"tag\" is given 2 times; give it at most once`,
		"/plants/changes?tag=%00":                                                       `query parameter \"tag\" must not contain the character U+0000`,
		"/plants/changes?types=":                                                        `query parameter \"types\" must list event types from ` + types + `, comma-separated, not \"\"`,
		"/plants/changes?types=plant.moved":                                             `query parameter \"types\" must list event types from ` + types + `, comma-separated, not \"plant.moved\"`,
		"/plants/changes?types=plant.created,":                                          `query parameter \"types\" must list event types from ` + types + `, comma-separated, not \"\"`,
		"/plants/changes?types=plant.created,plant.created":                             `query parameter \"types\" lists \"plant.created\" twice`,
		"/plants/changes?types=a,b,c,d":                                                 `query parameter \"types\" lists 4 types; there are 3: ` + types,
		"/plants/changes?types=plant.created&types=plant.updated":                       `query parameter \"types\" is given 2 times; give it at most once`,
		"/plants/changes?after=NOW":                                                     `query parameter \"after\" must be a cursor this API gave (a page's \"next\", an event's id, or a Plantstore-Changes-Cursor header), not \"NOW\"`,
		"/plants/changes?tag=green&tag=green":                                           `query parameter \"tag\" is given 2 times; give it at most once`,
		"/plants/changes?types=plant.deleted&types=plant.deleted":                       `query parameter \"types\" is given 2 times; give it at most once`,
		"/plants/changes?types=plant.created;plant.updated":                             `query string is malformed: invalid semicolon separator in query`,
		"/plants/changes?types=Plant.Created":                                           `query parameter \"types\" must list event types from ` + types + `, comma-separated, not \"Plant.Created\"`,
		"/plants/changes?types=plant.created,+plant.updated":                            `query parameter \"types\" must list event types from ` + types + `, comma-separated, not \" plant.updated\"`,
		"/plants/changes?types=plant.created,plant.updated,plant.deleted,plant.created": `query parameter \"types\" lists 4 types; there are 3: ` + types,
		"/plants/changes?tag=green&types=plant.moved&after=now":                         `query parameter \"types\" must list event types from ` + types + `, comma-separated, not \"plant.moved\"`,
		"/plants/changes?after=now&after=now":                                           `query parameter \"after\" is given 2 times; give it at most once`,
	} {
		for _, form := range []struct{ query, accept string }{
			{"", ""},                   // a page
			{"&wait=30s", ""},          // a long poll
			{"", eventStream},          // a stream
			{"&wait=30s", eventStream}, // a stream, which ignores wait
		} {
			t.Run(target+form.query+" "+form.accept, func(t *testing.T) {
				assertAnswer(t, serveWith(api, target+form.query, "Accept", form.accept), http.StatusBadRequest, `{"error":400,"message":"`+msg+`"}`)
			})
		}
	}
	// after=now reads the head: a failing log is answered as for any read.
	assertAnswer(t, serveWith(api, "/plants/changes?after=now"), http.StatusInternalServerError, `{"error":500,"message":"internal error"}`)
}

// TestChangesQuietFilterKeepsUp: a long poll whose filter matches nothing
// while other writes run answers, when its wait is over, an empty page
// whose next is the head, so that its follower never falls behind the
// retention; one that reads full pages of other changes reads on to the
// one it wants.
func TestChangesQuietFilterKeepsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		api := newFeedAPI(t, store, store, nil)
		changeScript(t, store)
		answered := longPoll(t.Context(), api, "/plants/changes?types=plant.deleted&wait=60s&after="+cursor4)
		for id := int64(7); id <= 8; id++ {
			if _, err := store.Create(context.Background(), plant.Plant{ID: id, Name: "x"}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		select {
		case w := <-answered:
			t.Fatalf("answered with no change it asked for: %d %s", w.Code, w.Body)
		default:
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case w := <-answered:
			assertAnswer(t, w, http.StatusOK, emptyPage+cursor6+`"}`)
		default:
			t.Fatal("the wait is over and the long poll did not answer")
		}
		w := <-longPoll(t.Context(), api, "/plants/changes?types=plant.deleted&limit=1&wait=60s&after="+cursor0)
		assertAnswer(t, w, http.StatusOK, `{"changes":[`+deleted2+`],"next":"`+cursor4+`"}`)
	})
}

// TestChangesFilteredStream: a filtered stream gives the changes it keeps
// and a bookmark when it has read past others; its heartbeats are
// bookmarks. after=now starts at the head.
func TestChangesFilteredStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		stopping := make(chan struct{})
		api := newFeedAPI(t, store, store, stopping)
		changeScript(t, store)
		time.Sleep(time.Minute - 3750*time.Millisecond)
		event := func(cursor, typ, data string) string {
			return "id: " + cursor + "\nevent: " + typ + "\ndata: " + data + "\n\n"
		}
		bookmark := func(cursor string) string { return event(cursor, "bookmark", `{"cursor":"`+cursor+`"}`) }
		start := func(target string) (*streamRecorder, chan struct{}) {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, target, nil)
			req.Header.Set("Accept", "text/event-stream")
			w := &streamRecorder{rec: httptest.NewRecorder()}
			ended := make(chan struct{})
			go func() {
				api.ServeHTTP(w, req)
				close(ended)
			}()
			return w, ended
		}
		w, ended := start("/plants/changes?types=plant.created")
		now, endedNow := start("/plants/changes?after=now&tag=green")
		synctest.Wait()
		want := event(cursor1, "plant.created", created1) + event(cursor2, "plant.created", created2) + bookmark(cursor4)
		if _, body, _ := w.state(); body != want {
			t.Fatalf("stream start: %q, want %q", body, want)
		}
		if code, body, flushes := now.state(); code != http.StatusOK || body != "" || flushes != 1 {
			t.Fatalf("stream from now: %d %q (%d flushes), want 200, nothing, flushed once", code, body, flushes)
		}
		if err := store.Replace(context.Background(), plant.Plant{ID: 1, Name: "fern"}, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(changesGather)
		synctest.Wait()
		want += bookmark(cursor5)
		if _, body, _ := w.state(); body != want {
			t.Fatalf("after a change it does not keep: %q, want %q", body, want)
		}
		wantNow := event(cursor5, "plant.deleted", `{"cursor":"`+cursor5+`","type":"plant.deleted","id":1,"version":5,"timestamp":"2000-01-01T00:01:00.000Z"}`)
		if _, body, _ := now.state(); body != wantNow {
			t.Fatalf("stream from now, tag green: %q, want %q", body, wantNow)
		}
		time.Sleep(changesHeartbeat - changesGather)
		synctest.Wait()
		want += bookmark(cursor5)
		if _, body, _ := w.state(); body != want {
			t.Fatalf("after a heartbeat: %q, want %q", body, want)
		}
		close(stopping)
		<-ended
		<-endedNow
	})
}

// TestChangesFilteredIsTheFeedRestricted: over random writes (creates,
// replaces that change tags, deletes), every filter's pages, followed with
// small pages, give exactly the unfiltered feed restricted by
// changes.Filter, with the same cursors, and a mirror of a tag built from
// them holds exactly the store's plants of that tag.
func TestChangesFilteredIsTheFeedRestricted(t *testing.T) {
	store := newFeedStore()
	api := newFeedAPI(t, store, store, nil)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(40, 1))
	tags := []*string{nil, plant.StringPtr("a"), plant.StringPtr("b")}
	for range 400 {
		id := rng.Int64N(12) + 1
		p := plant.Plant{ID: id, Name: "p", Tag: tags[rng.IntN(len(tags))]}
		switch rng.IntN(3) {
		case 0:
			_, _ = store.Create(ctx, p)
		case 1:
			_ = store.Replace(ctx, p, nil)
		case 2:
			_ = store.Delete(ctx, id)
		}
	}
	type change struct {
		Cursor string          `json:"cursor"`
		Type   string          `json:"type"`
		ID     int64           `json:"id"`
		Plant  json.RawMessage `json:"plant"`
	}
	follow := func(query string) []change {
		var all []change
		after := cursorStart
		for {
			w := serve(api, http.MethodGet, "/plants/changes?limit=7&after="+after+query)
			var page struct {
				Changes []change `json:"changes"`
				Next    string   `json:"next"`
			}
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &page) != nil {
				t.Fatalf("%s: %d %s", query, w.Code, w.Body)
			}
			all = append(all, page.Changes...)
			if page.Next == after {
				return all
			}
			after = page.Next
		}
	}
	records, err := store.Changes(ctx, changes.Cursor{}, 100000)
	if err != nil {
		t.Fatal(err)
	}
	for query, filter := range map[string]changes.Filter{
		"&tag=a":                                   {Tag: plant.StringPtr("a")},
		"&tag=b&types=plant.deleted":               {Tag: plant.StringPtr("b"), Kinds: []changes.Kind{changes.Deleted}},
		"&types=plant.updated":                     {Kinds: []changes.Kind{changes.Replaced}},
		"&types=plant.created,plant.deleted":       {Kinds: []changes.Kind{changes.Created, changes.Deleted}},
		"&tag=b&types=plant.created,plant.updated": {Tag: plant.StringPtr("b"), Kinds: []changes.Kind{changes.Created, changes.Replaced}},
	} {
		var want []string
		for _, rec := range records {
			if rec, ok := filter.Apply(rec); ok {
				want = append(want, string(appendChange(nil, rec)))
			}
		}
		var got []string
		for _, c := range follow(query) {
			b, _ := json.Marshal(c)
			got = append(got, string(b))
		}
		// Compare as the feed writes them: re-encode want likewise.
		for i := range want {
			var c change
			_ = json.Unmarshal([]byte(want[i]), &c)
			b, _ := json.Marshal(c)
			want[i] = string(b)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %s\nwant %s", query, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	mirror := map[int64]bool{}
	for _, c := range follow("&tag=a") {
		if c.Type == "plant.deleted" {
			delete(mirror, c.ID)
		} else {
			mirror[c.ID] = true
		}
	}
	listed, err := store.List(ctx, plant.ListQuery{Tag: plant.StringPtr("a"), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(mirror) || len(listed) == 0 {
		t.Fatalf("mirror of tag a holds %d plants, the store %d", len(mirror), len(listed))
	}
	for _, p := range listed {
		if !mirror[p.ID] {
			t.Fatalf("mirror of tag a lacks plant %d", p.ID)
		}
	}
}
