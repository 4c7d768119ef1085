package main

// A store restored from a backup, or copied into a fresh store by export
// and import, must not make a follower of the change feed or a webhook
// receiver lose changes silently: a follower whose cursor the store does
// not hold is told to list again (410), and versions never go back, so a
// receiver that applies by version takes every change made after it.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// feedFollower keeps a copy of the plants as docs/changes.md says: it
// lists, then follows the feed from the listing's cursor, and lists again
// when the feed answers 410. It reads pages without waiting, so that what
// it holds after sync is exactly what the feed gave.
type feedFollower struct {
	plants  map[int64]string // id: the plant's JSON
	cursor  string
	relists int // listings after the first: the times the feed said 410
}

// historyGet reads path from api with the test's token, failing t on a
// transport error.
func historyGet(t *testing.T, api, path string) (int, http.Header, []byte) {
	t.Helper()
	req := authed(t, http.MethodGet, api+path)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, resp.Header, body
}

// listPlants walks every page of GET /plants and returns the plants (as
// their JSON, by id) and the first page's changes cursor.
func listPlants(t *testing.T, api string) (map[int64]string, string) {
	t.Helper()
	out := map[int64]string{}
	cursor, path := "", "/plants?limit=2"
	for path != "" {
		status, header, body := historyGet(t, api, path)
		if status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, status, body)
		}
		if cursor == "" {
			cursor = header.Get(plants.ChangesCursorHeader)
		}
		var page []json.RawMessage
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		for _, raw := range page {
			var p struct{ ID int64 }
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			out[p.ID] = string(raw)
		}
		path = ""
		if link := header.Get("Link"); link != "" {
			path = strings.TrimPrefix(link[strings.Index(link, "<")+1:strings.Index(link, ">")], api)
		}
	}
	if cursor == "" {
		t.Fatal("the listing carries no changes cursor")
	}
	return out, cursor
}

// list builds the copy from a listing.
func (f *feedFollower) list(t *testing.T, api string) {
	t.Helper()
	f.plants, f.cursor = listPlants(t, api)
}

// sync applies every change the feed has after the follower's cursor; on
// a 410 it lists again (once per call) and follows on from there.
func (f *feedFollower) sync(t *testing.T, api string) {
	t.Helper()
	relisted := false
	for {
		status, _, body := historyGet(t, api, "/plants/changes?limit=2&after="+f.cursor)
		if status == http.StatusGone && !relisted {
			relisted = true
			f.relists++
			f.list(t, api)
			continue
		}
		if status != http.StatusOK {
			t.Fatalf("the feed after %s = %d %s", f.cursor, status, body)
		}
		var page struct {
			Changes []struct {
				Type  string
				ID    int64
				Plant json.RawMessage
			}
			Next string
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("the feed's page %s: %v", body, err)
		}
		for _, c := range page.Changes {
			if c.Type == "plant.deleted" {
				delete(f.plants, c.ID)
			} else {
				f.plants[c.ID] = string(c.Plant)
			}
		}
		f.cursor = page.Next
		if len(page.Changes) == 0 {
			return
		}
	}
}

// envelopeMirror is what a receiver that applies by version (as
// docs/webhooks.md's does) holds after the requests r got, in their
// order: a change is applied only when its version is greater than the
// last one applied to its plant, deletes included.
func envelopeMirror(t *testing.T, r *webhookstest.Receiver) map[int64]string {
	t.Helper()
	plants, versions, seen := map[int64]string{}, map[int64]int64{}, map[string]bool{}
	for _, req := range r.Requests() {
		if req.Status != http.StatusOK || seen[req.ID] {
			continue
		}
		seen[req.ID] = true
		var e struct {
			Type string
			Data struct {
				ID      int64
				Version int64
				Plant   json.RawMessage
			}
		}
		if err := json.Unmarshal(req.Body, &e); err != nil || !req.Verified {
			t.Fatalf("request %s: %s: %v (verified: %v)", req.ID, req.Body, err, req.Verified)
		}
		if e.Data.Version <= versions[e.Data.ID] {
			continue // stale, or a version seen before: dropped
		}
		versions[e.Data.ID] = e.Data.Version
		if e.Type == "plant.deleted" {
			delete(plants, e.Data.ID)
		} else {
			plants[e.Data.ID] = string(e.Data.Plant)
		}
	}
	return plants
}

// waitForEvents waits until r has n distinct events answered 200.
func waitForEvents(t *testing.T, r *webhookstest.Receiver, n int) {
	t.Helper()
	poll.Wait(t, 20*time.Millisecond, time.Minute, fmt.Sprintf("%d events at the receiver", n), func() (bool, error) {
		got := len(r.Delivered())
		return got >= n, fmt.Errorf("%d events", got)
	})
}

// historyWrites makes each change through the API: "PUT id name", "POST
// id name" or "DELETE id".
func historyWrites(t *testing.T, s *testServer, changes ...string) {
	t.Helper()
	for _, c := range changes {
		f := strings.Fields(c)
		var r response
		switch f[0] {
		case "POST":
			r = s.post(t, fmt.Sprintf(`{"id":%s,"name":%q}`, f[1], f[2]))
		case "PUT":
			r = s.do(t, s.request(t, http.MethodPut, "/plants/"+f[1], testToken, "application/json", fmt.Appendf(nil, `{"name":%q}`, f[2])))
		case "DELETE":
			r = s.do(t, s.request(t, http.MethodDelete, "/plants/"+f[1], testToken, "", nil))
		}
		if r.Status != http.StatusOK && r.Status != http.StatusNoContent {
			t.Fatalf("%s = %d %s", c, r.Status, r.Body)
		}
	}
}

// historyConfig is a bolt server in dir sending envelopes to r.
func historyConfig(t *testing.T, dir, hooks string) config {
	t.Helper()
	cfg := boltConfig(t, dir)
	cfg.Webhooks.File = hooks
	cfg.Webhooks.AllowPrivate, cfg.Webhooks.AllowHTTP = true, true
	return cfg
}

// newEnvelopeReceiver is a receiver named in a webhooks file of its own,
// getting every event as an envelope.
func newEnvelopeReceiver(t *testing.T) (*webhookstest.Receiver, string) {
	t.Helper()
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	hooks := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFileWithFormats(t, hooks, secret, map[string]*webhookstest.Receiver{"mirror": r}, map[string]string{"mirror": "envelope"})
	return r, hooks
}

// sameCopy marks t failed unless what holds the plants as the store does.
func sameCopy(t *testing.T, what string, got map[int64]string, s *testServer) {
	t.Helper()
	want, _ := listPlants(t, s.API)
	if !maps.Equal(got, want) {
		ids := map[int64]bool{}
		for id := range got {
			ids[id] = true
		}
		for id := range want {
			ids[id] = true
		}
		var b strings.Builder
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			fmt.Fprintf(&b, "\n  %d: %q, the store %q", id, got[id], want[id])
		}
		t.Errorf("%s differs from the store:%s", what, b.String())
	}
}

// TestBoltRestoreTellsFollowersAndReceivers: a bolt store stopped, copied
// (docs/operations.md's offline backup), changed, then restored from the
// copy and changed again. A follower that saw the changes the restore
// lost is told to list again (410) and ends equal to the store; one that
// saw none of them follows on without listing; a receiver that applies by
// version takes every change made after the restore, whose versions are
// greater than the lost ones', and ends equal to the store.
func TestBoltRestoreTellsFollowersAndReceivers(t *testing.T) {
	t.Parallel()
	dir, backup := t.TempDir(), filepath.Join(t.TempDir(), "plants.db")
	r, hooks := newEnvelopeReceiver(t)
	var eager, away feedFollower

	s := startServer(t, historyConfig(t, dir, hooks))
	eager.list(t, s.API)
	historyWrites(t, s, "POST 1 fern", "POST 2 ivy", "POST 3 moss")
	eager.sync(t, s.API)
	away.list(t, s.API)
	waitForEvents(t, r, 3)
	stopServer(t, s)
	if err := copyFile(filepath.Join(dir, boltstore.FileName), backup, 0o600); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, historyConfig(t, dir, hooks))
	historyWrites(t, s, "PUT 1 lost", "POST 4 lost", "DELETE 2")
	eager.sync(t, s.API)
	sameCopy(t, "the follower before the restore", eager.plants, s)
	waitForEvents(t, r, 6)
	sameCopy(t, "the receiver before the restore", envelopeMirror(t, r), s)
	stopServer(t, s)
	if err := copyFile(backup, filepath.Join(dir, boltstore.FileName), 0o600); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, historyConfig(t, dir, hooks))
	historyWrites(t, s, "PUT 1 again", "POST 4 again", "PUT 2 again", "PUT 3 again")
	eager.sync(t, s.API)
	sameCopy(t, "the follower that saw the lost changes", eager.plants, s)
	if eager.relists != 1 {
		t.Errorf("the follower that saw the lost changes listed again %d times, want once (told by a 410)", eager.relists)
	}
	away.sync(t, s.API)
	sameCopy(t, "the follower that was away", away.plants, s)
	if away.relists != 0 {
		t.Errorf("the follower that saw none of the lost changes listed again %d times, want none", away.relists)
	}
	waitForEvents(t, r, 10)
	sameCopy(t, "the receiver", envelopeMirror(t, r), s)
}

// TestExportImportTellsFollowersAndReceivers: a store exported and
// imported into a fresh one (the bolt to postgres move, here bolt to
// bolt) is another store: a follower's cursor is answered 410 and it
// lists again, and the fresh store's versions are greater than the old
// one's, so a receiver of both ends equal to the fresh store.
func TestExportImportTellsFollowersAndReceivers(t *testing.T) {
	t.Parallel()
	r, hooks := newEnvelopeReceiver(t)
	var f feedFollower
	file := filepath.Join(t.TempDir(), "plants.ndjson")

	old := startServer(t, historyConfig(t, t.TempDir(), hooks))
	f.list(t, old.API)
	historyWrites(t, old, "POST 1 fern", "POST 2 ivy", "POST 3 moss", "PUT 1 renamed", "PUT 1 renamed-again")
	f.sync(t, old.API)
	waitForEvents(t, r, 5)
	if code, _, stderr := runCLI(t, old, "export", "-f", file); code != 0 {
		t.Fatalf("export: exit %d, %s", code, stderr)
	}
	stopServer(t, old)

	fresh := startServer(t, historyConfig(t, t.TempDir(), hooks))
	if code, _, stderr := runCLI(t, fresh, "import", "-f", file); code != 0 {
		t.Fatalf("import: exit %d, %s", code, stderr)
	}
	historyWrites(t, fresh, "PUT 1 imported", "PUT 2 imported", "POST 4 new")
	f.sync(t, fresh.API)
	sameCopy(t, "the follower", f.plants, fresh)
	if f.relists != 1 {
		t.Errorf("the follower listed again %d times, want once (told by a 410)", f.relists)
	}
	waitForEvents(t, r, 5+3+3)
	sameCopy(t, "the receiver", envelopeMirror(t, r), fresh)
}

// TestCursorOfAnotherStoreIsGone: a cursor one bolt store gave is a 410 at
// another (a fresh one holding the same number of changes), and so are one
// ahead of the store's head and one with its first byte changed, never an
// empty page to wait on.
func TestCursorOfAnotherStoreIsGone(t *testing.T) {
	t.Parallel()
	a := startServer(t, boltConfig(t, t.TempDir()))
	b := startServer(t, boltConfig(t, t.TempDir()))
	for _, s := range []*testServer{a, b} {
		historyWrites(t, s, "POST 1 fern", "POST 2 ivy")
	}
	_, cursor := listPlants(t, a.API)
	status, _, body := historyGet(t, b.API, "/plants/changes?wait=30s&after="+cursor)
	const unknown = `{"error":410,"message":"the cursor is not one of this store's history (another store's, or given after the backup this store was restored from): list the plants again (GET /plants) and follow the changes from the listing's Plantstore-Changes-Cursor header"}`
	if status != http.StatusGone || strings.TrimSpace(string(body)) != unknown {
		t.Fatalf("another store's cursor = %d %s, want 410 %s", status, body, unknown)
	}
	c, err := plants.ParseCursor("cursor", cursor)
	if err != nil {
		t.Fatal(err)
	}
	ahead := c
	ahead.Version++
	forged := c
	forged.History = forged.History&(1<<56-1) | 0x7f<<56 // its first byte set to 0x7f
	if forged.History == c.History {
		forged.History ^= 1 << 55
	}
	for what, after := range map[string]changes.Cursor{"ahead of the head": ahead, "with its first byte set to 0x7f": forged} {
		status, _, body = historyGet(t, a.API, "/plants/changes?wait=30s&after="+plants.EncodeCursor(after))
		if status != http.StatusGone || strings.TrimSpace(string(body)) != unknown {
			t.Fatalf("a cursor %s = %d %s, want 410 %s", what, status, body, unknown)
		}
	}
}
