package plants

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestChangesSnapshotPages: snapshot=true gives every current plant as a
// plant.created of the head's version, marked "snapshot":true, in id
// order, page after page from each next (a snapshot cursor), then the page
// that completes it, whose next is the head's change cursor; a change made
// between two pages to a plant already given comes before the next plants.
func TestChangesSnapshotPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := newFeedStore()
		api := newFeedAPI(t, store, store, nil)
		changeScript(t, store) // plant 1 (version 3) is left, at cursor4
		for _, p := range []plant.Plant{{ID: 7, Name: "moss"}, {ID: 8, Name: "reed", Tag: plant.StringPtr("green")}} {
			if _, err := store.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().UTC().Format(changes.TimestampLayout)
		at := func(last int64) string {
			return encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: 6}, Last: &last}, tagDigest{})
		}
		// The text of a snapshot cursor: the position's cursor, the last
		// id, and no tag.
		if got, want := at(7), "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAGAAAAAAAAAAcAAAAAAAAAAAA"; got != want {
			t.Fatalf("snapshot cursor %q, want %q", got, want)
		}
		plant1 := `{"cursor":"` + at(1) + `","type":"plant.created","id":1,"version":6,"timestamp":"` + now + `","plant":{"id":1,"name":"fern","tag":"\"shade\""},"snapshot":true}`
		plant7 := `{"cursor":"` + at(7) + `","type":"plant.created","id":7,"version":6,"timestamp":"` + now + `","plant":{"id":7,"name":"moss"},"snapshot":true}`
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?snapshot=true&limit=2"), http.StatusOK,
			`{"changes":[`+plant1+`,`+plant7+`],"next":"`+at(7)+`","snapshot":"partial"}`)

		// Plant 1 changes before the next page: the change comes first.
		if err := store.Replace(ctx, plant.Plant{ID: 1, Name: "fern", Tag: plant.StringPtr("green")}, nil); err != nil {
			t.Fatal(err)
		}
		at7 := func(v int64) string {
			last := int64(7)
			return encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: v}, Last: &last}, tagDigest{})
		}
		updated := `{"cursor":"` + at7(7) + `","type":"plant.updated","id":1,"version":7,"timestamp":"` + now + `","plant":{"id":1,"name":"fern","tag":"green"}}`
		last8 := int64(8)
		plant8 := `{"cursor":"` + encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: 7}, Last: &last8}, tagDigest{}) +
			`","type":"plant.created","id":8,"version":7,"timestamp":"` + now + `","plant":{"id":8,"name":"reed","tag":"green"},"snapshot":true}`
		// With room for the change alone, the page holds it and goes on
		// from the head it was read at; with room for the plant too, it is
		// the last page.
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?limit=1&after="+at(7)), http.StatusOK,
			`{"changes":[`+updated+`],"next":"`+at7(7)+`","snapshot":"partial"}`)
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?limit=2&after="+at(7)), http.StatusOK,
			`{"changes":[`+updated+`,`+plant8+`],"next":"AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAH","snapshot":"complete"}`)
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?limit=2&after="+at7(7)), http.StatusOK,
			`{"changes":[`+plant8+`],"next":"AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAH","snapshot":"complete"}`)

		// A tag's snapshot: its plants only, bound to the tag.
		green := tagDigest{set: true, digest: digestTag(plant.StringPtr("green")).digest}
		last1 := int64(1)
		plant1Green := `{"cursor":"` + encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: 7}, Last: &last1}, green) +
			`","type":"plant.created","id":1,"version":7,"timestamp":"` + now + `","plant":{"id":1,"name":"fern","tag":"green"},"snapshot":true}`
		plant8Green := `{"cursor":"` + encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: 7}, Last: &last8}, green) +
			`","type":"plant.created","id":8,"version":7,"timestamp":"` + now + `","plant":{"id":8,"name":"reed","tag":"green"},"snapshot":true}`
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?snapshot=true&tag=green&types=plant.created,plant.deleted"), http.StatusOK,
			`{"changes":[`+plant1Green+`,`+plant8Green+`],"next":"AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAH","snapshot":"complete"}`)
		// An empty snapshot completes at once.
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?snapshot=true&tag=none"), http.StatusOK,
			`{"changes":[],"next":"AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAH","snapshot":"complete"}`)
	})
}

// TestChangesSnapshotRefusesBadCombinations: a snapshot's parameters that
// make no sense together are a 400 naming them, decided before the log is
// read, as a page and as a stream alike.
func TestChangesSnapshotRefusesBadCombinations(t *testing.T) {
	api := newFeedAPI(t, memstore.New(), failingLog{errors.New("the log was read")}, nil)
	last := int64(7)
	untagged := encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: 6}, Last: &last}, tagDigest{})
	const noAfter = `query parameter \"snapshot\" starts a snapshot and takes no \"after\": a snapshot goes on from a page's \"next\" without snapshot=true`
	const created = `query parameter \"types\" must list plant.created with a snapshot: its plants are given as plant.created`
	for target, msg := range map[string]string{
		"/plants/changes?snapshot=yes":                               `query parameter \"snapshot\" must be true or false, not \"yes\"`,
		"/plants/changes?snapshot=":                                  `query parameter \"snapshot\" must be true or false, not \"\"`,
		"/plants/changes?snapshot=true&snapshot=true":                `query parameter \"snapshot\" is given 2 times; give it at most once`,
		"/plants/changes?snapshot=true&after=now":                    noAfter,
		"/plants/changes?snapshot=true&after=" + cursor4:             noAfter,
		"/plants/changes?snapshot=true&after=" + untagged:            noAfter,
		"/plants/changes?snapshot=true&types=plant.deleted":          created,
		"/plants/changes?after=" + untagged + "&types=plant.updated": created,
		"/plants/changes?after=" + untagged + "&tag=green":           `query parameter \"tag\" must be the one the snapshot was started with: a snapshot cursor goes on only with its own tag filter`,
		"/plants/changes?after=" + untagged[:54] + "B":               `query parameter \"after\" must be a cursor this API gave (a page's \"next\", an event's id, or a Plantstore-Changes-Cursor header), not \"` + untagged[:54] + `B\"`,
	} {
		for _, accept := range []string{"", eventStream} {
			assertAnswer(t, serveWith(api, target, "Accept", accept), http.StatusBadRequest, `{"error":400,"message":"`+msg+`"}`)
		}
	}
	// snapshot=false is no snapshot.
	assertAnswer(t, serveWith(api, "/plants/changes?snapshot=false"), http.StatusInternalServerError, `{"error":500,"message":"internal error"}`)
}

// TestChangesSnapshotCursorOfAnotherStoreIsGone: a snapshot cursor of
// another history, or ahead of the head, is a 410 like a change cursor's.
func TestChangesSnapshotCursorOfAnotherStoreIsGone(t *testing.T) {
	store := newFeedStore()
	api := newFeedAPI(t, store, store, nil)
	if _, err := store.Create(context.Background(), plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	last := int64(1)
	for _, c := range []changes.Cursor{{History: testHistory + 1, Version: 1}, {History: testHistory, Version: 9}} {
		target := "/plants/changes?after=" + encodeSnapshotCursor(changes.SnapshotPosition{Cursor: c, Last: &last}, tagDigest{})
		assertAnswer(t, serve(api, http.MethodGet, target), http.StatusGone, `{"error":410,"message":"`+unknownMessage+`"}`)
	}
}

// TestChangesSnapshotStream: a stream with snapshot=true sends the
// snapshot's plants (ids: snapshot cursors), its changes between pages, a
// snapshot-end event at the head, then the changes as they commit; a
// reconnection with one of its ids goes on with the snapshot.
func TestChangesSnapshotStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := newFeedStore()
		stopping := make(chan struct{})
		api := newFeedAPI(t, store, store, stopping)
		changeScript(t, store) // plant 1 is left, at cursor4
		if _, err := store.Create(ctx, plant.Plant{ID: 7, Name: "moss"}); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Format(changes.TimestampLayout)
		at := func(last int64) string {
			return encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: 5}, Last: &last}, tagDigest{})
		}
		event := func(id, typ, data string) string { return "id: " + id + "\nevent: " + typ + "\ndata: " + data + "\n\n" }
		plant1 := `{"cursor":"` + at(1) + `","type":"plant.created","id":1,"version":5,"timestamp":"` + now + `","plant":{"id":1,"name":"fern","tag":"\"shade\""},"snapshot":true}`
		plant7 := `{"cursor":"` + at(7) + `","type":"plant.created","id":7,"version":5,"timestamp":"` + now + `","plant":{"id":7,"name":"moss"},"snapshot":true}`
		end := event(cursor5, "snapshot-end", `{"cursor":"`+cursor5+`"}`)

		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/plants/changes?snapshot=true&limit=1", nil)
		req.Header.Set("Accept", eventStream)
		w := &streamRecorder{rec: httptest.NewRecorder()}
		ended := make(chan struct{})
		go func() {
			api.ServeHTTP(w, req)
			close(ended)
		}()
		synctest.Wait()
		want := event(at(1), "plant.created", plant1) + event(at(7), "plant.created", plant7) + end
		if code, body, _ := w.state(); code != http.StatusOK || body != want {
			t.Fatalf("stream: %d %q, want 200 %q", code, body, want)
		}
		if _, err := store.Create(ctx, plant.Plant{ID: 8, Name: "reed"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(changesGather)
		synctest.Wait()
		created8 := `{"cursor":"` + cursor6 + `","type":"plant.created","id":8,"version":6,"timestamp":"` + now + `","plant":{"id":8,"name":"reed"}}`
		want += event(cursor6, "plant.created", created8)
		if _, body, _ := w.state(); body != want {
			t.Fatalf("then: %q, want %q", body, want)
		}
		close(stopping)
		<-ended

		// Reconnecting after the first plant, with the same URL: the rest of
		// the snapshot (the plants as they are now), its end, no change.
		api = newFeedAPI(t, store, store, nil)
		now = time.Now().UTC().Format(changes.TimestampLayout)
		w = &streamRecorder{rec: httptest.NewRecorder()}
		rctx, cancel := context.WithCancel(t.Context())
		req = httptest.NewRequestWithContext(rctx, http.MethodGet, "/plants/changes?snapshot=true&limit=1", nil)
		req.Header.Set("Accept", eventStream)
		req.Header.Set("Last-Event-ID", at(1))
		ended = make(chan struct{})
		go func() {
			api.ServeHTTP(w, req)
			close(ended)
		}()
		synctest.Wait()
		at6 := func(last int64) string {
			return encodeSnapshotCursor(changes.SnapshotPosition{Cursor: changes.Cursor{History: testHistory, Version: 6}, Last: &last}, tagDigest{})
		}
		plant7 = `{"cursor":"` + at6(7) + `","type":"plant.created","id":7,"version":6,"timestamp":"` + now + `","plant":{"id":7,"name":"moss"},"snapshot":true}`
		plant8 := `{"cursor":"` + at6(8) + `","type":"plant.created","id":8,"version":6,"timestamp":"` + now + `","plant":{"id":8,"name":"reed"},"snapshot":true}`
		want = event(at6(7), "plant.created", plant7) + event(at6(8), "plant.created", plant8) + event(cursor6, "snapshot-end", `{"cursor":"`+cursor6+`"}`)
		if code, body, _ := w.state(); code != http.StatusOK || body != want {
			t.Fatalf("resumed: %d %q, want 200 %q", code, body, want)
		}
		cancel()
		<-ended
	})
}
