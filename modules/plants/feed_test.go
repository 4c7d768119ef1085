package plants

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Cursors of the memory store's changes by version (its Tx is zero), in
// the history of newFeedStore; cursor0 is that store's start, cursorStart
// the start of any store (a follower's first page's next when nothing was
// written yet).
const (
	testHistory = 0x5eed
	cursorStart = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	cursor0     = "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAA"
	cursor1     = "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAB"
	cursor2     = "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAC"
	cursor3     = "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAD"
	cursor4     = "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAE"
	cursor5     = "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAF"
	cursor6     = "AAAAAAAAXu0AAAAAAAAAAAAAAAAAAAAG"
)

// newFeedStore is a memory store whose history is testHistory.
func newFeedStore() *memstore.Store {
	return memstore.NewWithOptions(memstore.Options{History: testHistory})
}

// The changes of changeScript, as the feed writes them. A bubble's clock
// starts at midnight UTC, 2000-01-01.
const (
	created1  = `{"cursor":"` + cursor1 + `","type":"plant.created","id":1,"version":1,"timestamp":"2000-01-01T00:00:00.000Z","plant":{"id":1,"name":"fern"}}`
	created2  = `{"cursor":"` + cursor2 + `","type":"plant.created","id":2,"version":2,"timestamp":"2000-01-01T00:00:01.250Z","plant":{"id":2,"name":"ivy","tag":"green"}}`
	updated1  = `{"cursor":"` + cursor3 + `","type":"plant.updated","id":1,"version":3,"timestamp":"2000-01-01T00:00:02.500Z","plant":{"id":1,"name":"fern","tag":"\"shade\""}}`
	deleted2  = `{"cursor":"` + cursor4 + `","type":"plant.deleted","id":2,"version":4,"timestamp":"2000-01-01T00:00:03.750Z"}`
	created7  = `{"cursor":"` + cursor5 + `","type":"plant.created","id":7,"version":5,"timestamp":"2000-01-01T00:01:00.000Z","plant":{"id":7,"name":"moss"}}`
	created8  = `{"cursor":"` + cursor6 + `","type":"plant.created","id":8,"version":6,"timestamp":"2000-01-01T00:01:00.005Z","plant":{"id":8,"name":"reed"}}`
	emptyPage = `{"changes":[],"next":"` // + the request's cursor + `"}`
)

// changeScript makes four changes, 1.25 s apart, and writes that change
// nothing (an identical re-create, a PUT of the same content, a DELETE of
// a missing plant) in between, which the log does not record.
func changeScript(t *testing.T, store *memstore.Store) {
	t.Helper()
	ctx := context.Background()
	steps := []func() error{
		func() error { _, err := store.Create(ctx, plant.Plant{ID: 1, Name: "fern"}); return err },
		func() error {
			_, err := store.Create(ctx, plant.Plant{ID: 2, Name: "ivy", Tag: plant.StringPtr("green")})
			if err == nil {
				_, err = store.Create(ctx, plant.Plant{ID: 1, Name: "fern"})
			}
			return err
		},
		func() error {
			err := store.Replace(ctx, plant.Plant{ID: 1, Name: "fern", Tag: plant.StringPtr(`"shade"`)}, nil)
			if err == nil {
				err = store.Replace(ctx, plant.Plant{ID: 1, Name: "fern", Tag: plant.StringPtr(`"shade"`)}, nil)
			}
			return err
		},
		func() error { return store.Delete(ctx, 2) },
	}
	for i, step := range steps {
		if i > 0 {
			time.Sleep(1250 * time.Millisecond)
		}
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := store.Delete(ctx, 2); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("delete of a missing plant: %v", err)
	}
}

// TestChangesPages: the feed gives each committed change once, oldest
// first, page by page, each page's next resuming after it; a page past the
// last change is empty and resumes from the cursor it was given.
func TestChangesPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		api := newFeedAPI(t, store, store, nil)
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes"), http.StatusOK, emptyPage+cursorStart+`"}`)
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?after="+cursor0), http.StatusOK, emptyPage+cursor0+`"}`)
		changeScript(t, store)
		for target, body := range map[string]string{
			"/plants/changes":                                  `{"changes":[` + created1 + `,` + created2 + `,` + updated1 + `,` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?limit=2":                          `{"changes":[` + created1 + `,` + created2 + `],"next":"` + cursor2 + `"}`,
			"/plants/changes?limit=2&after=" + cursor2:         `{"changes":[` + updated1 + `,` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?after=" + cursor3:                 `{"changes":[` + deleted2 + `],"next":"` + cursor4 + `"}`,
			"/plants/changes?after=" + cursor4:                 emptyPage + cursor4 + `"}`,
			"/plants/changes?after=" + cursor0 + "&wait=0&x=1": `{"changes":[` + created1 + `,` + created2 + `,` + updated1 + `,` + deleted2 + `],"next":"` + cursor4 + `"}`,
		} {
			w := serve(api, http.MethodGet, target)
			assertAnswer(t, w, http.StatusOK, body)
		}
	})
}

// TestChangesRefuseCursorsOfAnotherHistory: a cursor this store never
// gave is a 410 telling the follower to list again, never an empty page it
// would wait on for ever: one ahead of the head (a follower of the changes
// that a copy restored from a backup lost, or a forged one), one of
// another store, the start of another store once this one has changes.
func TestChangesRefuseCursorsOfAnotherHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		api := newFeedAPI(t, store, store, nil)
		changeScript(t, store)
		const unknown = `{"error":410,"message":"the cursor is not one of this store's history (another store's, or given after the backup this store was restored from): list the plants again (GET /plants) and follow the changes from the listing's Plantstore-Changes-Cursor header"}`
		other := EncodeCursor(changes.Cursor{History: testHistory + 1, Version: 2})
		forged := "f" + cursor4[1:] // its first byte set to 0x7c: another history
		for _, after := range []string{cursor5, EncodeCursor(changes.Cursor{History: testHistory, Version: 1 << 40}), other, forged} {
			for _, target := range []string{"/plants/changes?after=" + after, "/plants/changes?wait=30s&after=" + after} {
				assertAnswer(t, serve(api, http.MethodGet, target), http.StatusGone, unknown)
			}
		}
		// The cursors it gave still follow.
		assertAnswer(t, serve(api, http.MethodGet, "/plants/changes?after="+cursor3), http.StatusOK, `{"changes":[`+deleted2+`],"next":"`+cursor4+`"}`)
	})
}

// TestListCarriesTheChangesCursor: every page of GET /plants carries the
// log's head as it was before the page was read.
func TestListCarriesTheChangesCursor(t *testing.T) {
	store := newFeedStore()
	api := newFeedAPI(t, store, store, nil)
	w := serve(api, http.MethodGet, "/plants")
	assertAnswer(t, w, http.StatusOK, `[]`)
	if got := w.Header().Values(ChangesCursorHeader); len(got) != 1 || got[0] != cursor0 {
		t.Fatalf("%s of an empty store = %q, want %q", ChangesCursorHeader, got, cursor0)
	}
	for id := range int64(3) {
		if _, err := store.Create(context.Background(), plant.Plant{ID: id, Name: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range []string{"/plants?limit=1", "/plants?after=0&limit=1", "/plants?after=2"} {
		w := serve(api, http.MethodGet, target)
		if got := w.Header().Values(ChangesCursorHeader); w.Code != http.StatusOK || len(got) != 1 || got[0] != cursor3 {
			t.Fatalf("GET %s = %d, %s %q; want 200, %q", target, w.Code, ChangesCursorHeader, got, cursor3)
		}
	}
	// The head is read before the page: a change committed in between is
	// both in the page and after the cursor, never in neither.
	between := &changeBeforeList{Store: store, change: func() {
		_, _ = store.Create(context.Background(), plant.Plant{ID: 9, Name: "late"})
	}}
	w = serve(newFeedAPI(t, between, store, nil), http.MethodGet, "/plants?after=2")
	assertAnswer(t, w, http.StatusOK, `[{"id":9,"name":"late"}]`)
	if got := w.Header().Get(ChangesCursorHeader); got != cursor3 {
		t.Fatalf("%s = %q, want %q (the head before the page)", ChangesCursorHeader, got, cursor3)
	}
}

// changeBeforeList commits a change as the listing starts to read.
type changeBeforeList struct {
	plant.Store
	change func()
}

func (s *changeBeforeList) List(ctx context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	s.change()
	return s.Store.List(ctx, q)
}

// longPoll sends GET target in the background; its answer arrives on the
// channel.
func longPoll(ctx context.Context, api http.Handler, target string) <-chan *httptest.ResponseRecorder {
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil))
		answered <- w
	}()
	return answered
}

// TestChangesLongPollAnswersAtTheCommit: a long poll with nothing to give
// waits, and is answered by the change's commit itself, changesGather
// later, with the changes committed meanwhile: once every goroutine is
// blocked the answer is out, which a poll timer (also blocked, and due
// only in a second) could not have done.
func TestChangesLongPollAnswersAtTheCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		api := newFeedAPI(t, store, store, nil)
		changeScript(t, store)
		time.Sleep(time.Minute - 3750*time.Millisecond)
		answered := longPoll(t.Context(), api, "/plants/changes?wait=60s&after="+cursor4)
		synctest.Wait()
		select {
		case w := <-answered:
			t.Fatalf("answered with no change: %d %s", w.Code, w.Body)
		default:
		}
		if _, err := store.Create(context.Background(), plant.Plant{ID: 7, Name: "moss"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(changesGather / 2)
		synctest.Wait()
		select {
		case w := <-answered:
			t.Fatalf("answered before the gather was over: %d %s", w.Code, w.Body)
		default:
		}
		if _, err := store.Create(context.Background(), plant.Plant{ID: 8, Name: "reed"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(changesGather / 2)
		synctest.Wait()
		select {
		case w := <-answered:
			assertAnswer(t, w, http.StatusOK, `{"changes":[`+created7+`,`+created8+`],"next":"`+cursor6+`"}`)
		default:
			t.Fatal("the commit did not answer the long poll, changesGather after it")
		}
	})
}

// TestChangesLongPollEnds: a long poll with no change answers an empty
// page resuming from its cursor when its wait is over, or at once when the
// server shuts down; a client that leaves gets the 499 nobody reads.
func TestChangesLongPollEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		stopping := make(chan struct{})
		api := newFeedAPI(t, store, store, stopping)
		changeScript(t, store)

		answered := longPoll(t.Context(), api, "/plants/changes?wait=5s&after="+cursor2+"&limit=1")
		synctest.Wait() // a page with a change is answered without waiting
		assertAnswer(t, <-answered, http.StatusOK, `{"changes":[`+updated1+`],"next":"`+cursor3+`"}`)

		start := time.Now()
		answered = longPoll(t.Context(), api, "/plants/changes?wait=5s&after="+cursor4)
		w := <-answered
		assertAnswer(t, w, http.StatusOK, emptyPage+cursor4+`"}`)
		if waited := time.Since(start); waited != 5*time.Second {
			t.Fatalf("the empty page came after %v, want the wait, 5s", waited)
		}

		answered = longPoll(t.Context(), api, "/plants/changes?wait=60s&after="+cursor4)
		synctest.Wait()
		close(stopping)
		synctest.Wait()
		select {
		case w := <-answered:
			assertAnswer(t, w, http.StatusOK, emptyPage+cursor4+`"}`)
		default:
			t.Fatal("the shutdown did not end the long poll")
		}

		ctx, leave := context.WithCancel(t.Context())
		answered = longPoll(ctx, newFeedAPI(t, store, store, nil), "/plants/changes?wait=60s&after="+cursor4)
		synctest.Wait()
		leave()
		assertAnswer(t, <-answered, statusClientClosedRequest, `{"error":499,"message":"the client closed the request"}`)
	})
}

// TestChangesStream: with Accept: text/event-stream the feed is a stream of
// server-sent events, one per change as it commits, a heartbeat comment
// every 15 s while idle; it resumes after Last-Event-ID and ends when the
// server shuts down.
func TestChangesStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newFeedStore()
		stopping := make(chan struct{})
		api := newFeedAPI(t, store, store, stopping)
		changeScript(t, store)
		time.Sleep(time.Minute - 3750*time.Millisecond)

		event := func(cursor, typ, data string) string {
			return "id: " + cursor + "\nevent: " + typ + "\ndata: " + data + "\n\n"
		}
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/plants/changes?after="+cursor2+"&wait=30s", nil)
		req.Header.Set("Accept", "text/event-stream")
		w := &streamRecorder{rec: httptest.NewRecorder()}
		ended := make(chan struct{})
		go func() {
			api.ServeHTTP(w, req)
			close(ended)
		}()
		synctest.Wait()
		want := event(cursor3, "plant.updated", updated1) + event(cursor4, "plant.deleted", deleted2)
		if code, body, flushes := w.state(); code != http.StatusOK || body != want || flushes != 1 {
			t.Fatalf("stream start: %d %q (%d flushes), want 200 %q, flushed once", code, body, flushes, want)
		}
		for name, value := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store"} {
			if got := w.rec.Header().Values(name); len(got) != 1 || got[0] != value {
				t.Fatalf("%s = %q, want %q", name, got, value)
			}
		}
		if _, err := store.Create(context.Background(), plant.Plant{ID: 7, Name: "moss"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(changesGather / 2)
		if _, err := store.Create(context.Background(), plant.Plant{ID: 8, Name: "reed"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, _, flushes := w.state(); flushes != 1 {
			t.Fatalf("%d flushes before the gather was over, want 1", flushes)
		}
		time.Sleep(changesGather / 2)
		synctest.Wait()
		want += event(cursor5, "plant.created", created7) + event(cursor6, "plant.created", created8)
		if _, body, flushes := w.state(); body != want || flushes != 2 {
			t.Fatalf("after two commits, changesGather after the first: %q (%d flushes), want %q, flushed again once", body, flushes, want)
		}
		time.Sleep(15*time.Second - changesGather)
		synctest.Wait()
		want += ": heartbeat\n\n"
		if _, body, flushes := w.state(); body != want || flushes != 3 {
			t.Fatalf("after 15s idle: %q (%d flushes), want %q, flushed again", body, flushes, want)
		}
		close(stopping)
		<-ended
		if _, body, _ := w.state(); body != want {
			t.Fatalf("at shutdown: %q, want %q", body, want)
		}

		// Last-Event-ID wins over after; a stream with nothing to send yet
		// sends its headers at once.
		req = httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/plants/changes?after="+cursor0+"&limit=1", nil)
		req.Header.Set("Accept", "application/json;q=0.5, Text/Event-Stream")
		req.Header.Set("Last-Event-ID", cursor3)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req) // ends at once: the server is stopping
		if want := event(cursor4, "plant.deleted", deleted2) + event(cursor5, "plant.created", created7) + event(cursor6, "plant.created", created8); rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Fatalf("resumed stream, one change a write: %d %q, want 200 %q", rec.Code, rec.Body, want)
		}
		req.Header.Set("Last-Event-ID", cursor6)
		rec = httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Body.String() != "" || !rec.Flushed {
			t.Fatalf("stream with nothing to send: %d %q flushed %v, want 200, empty, flushed", rec.Code, rec.Body, rec.Flushed)
		}
	})
}

// streamRecorder records a stream that the test reads while it is written.
type streamRecorder struct {
	mu      sync.Mutex
	rec     *httptest.ResponseRecorder
	flushes int
}

func (s *streamRecorder) Header() http.Header { return s.rec.Header() }

func (s *streamRecorder) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.WriteHeader(code)
}

func (s *streamRecorder) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Write(b)
}

func (s *streamRecorder) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushes++
}

// state is the status, the body so far, and the flushes.
func (s *streamRecorder) state() (int, string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Code, s.rec.Body.String(), s.flushes
}

// followPage applies one page of the feed after cursor to mirror and
// returns the page's next and how many changes it held.
func followPage(t *testing.T, api http.Handler, cursor string, mirror map[int64]string) (string, int) {
	t.Helper()
	w := serve(api, http.MethodGet, "/plants/changes?limit=13&after="+cursor)
	if w.Code != http.StatusOK {
		t.Fatalf("follow: %d %s", w.Code, w.Body)
	}
	var page struct {
		Changes []struct {
			Type  string `json:"type"`
			ID    int64  `json:"id"`
			Plant *struct {
				Name string `json:"name"`
			} `json:"plant"`
		} `json:"changes"`
		Next string `json:"next"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
		t.Fatalf("follow: %v in %s", err, w.Body)
	}
	for _, ch := range page.Changes {
		if ch.Type == changes.Deleted.String() {
			delete(mirror, ch.ID)
		} else {
			mirror[ch.ID] = ch.Plant.Name
		}
	}
	return page.Next, len(page.Changes)
}

// TestListThenFollowMissesNothing: a follower that lists every page, then
// follows the feed from the first page's cursor, while writers create,
// replace and delete plants all along, ends with exactly the store's
// plants.
func TestListThenFollowMissesNothing(t *testing.T) {
	store := newFeedStore()
	api := newFeedAPI(t, store, store, nil)
	ctx := context.Background()
	for id := range int64(100) {
		if _, err := store.Create(ctx, plant.Plant{ID: id, Name: "seed"}); err != nil {
			t.Fatal(err)
		}
	}
	// A third of the writes may come before the first page; the rest wait
	// for it, so that the follower has changes to follow whatever the
	// scheduling.
	firstPage := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1)) //nolint:gosec // G404: a test's workload
			for i := range 3000 {
				if i == 1000 {
					<-firstPage
				}
				id, name := r.Int64N(200), "w"+strconv.Itoa(w)+"-"+strconv.Itoa(i)
				var err error
				switch r.IntN(3) {
				case 0:
					_, err = store.Create(ctx, plant.Plant{ID: id, Name: name})
				case 1:
					err = store.Replace(ctx, plant.Plant{ID: id, Name: name}, nil)
				default:
					err = store.Delete(ctx, id)
				}
				if err != nil && !errors.Is(err, plant.ErrConflict) && !errors.Is(err, plant.ErrNotFound) {
					t.Error(err)
					return
				}
			}
		})
	}
	writing := make(chan struct{})
	go func() { writers.Wait(); close(writing) }()

	mirror := map[int64]string{}
	var cursor string
	for after := ""; ; {
		w := serve(api, http.MethodGet, "/plants?limit=7"+after)
		if cursor == "" {
			cursor = w.Header().Get(ChangesCursorHeader)
			close(firstPage)
		}
		var page []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || w.Code != http.StatusOK {
			t.Fatalf("list: %d %s", w.Code, w.Body)
		}
		for _, p := range page {
			mirror[p.ID] = p.Name
		}
		if len(page) < 7 {
			break
		}
		after = "&after=" + strconv.FormatInt(page[len(page)-1].ID, 10)
	}
	followed := 0
	for {
		done := isClosed(writing) // before the page: a page read after the last write
		next, n := followPage(t, api, cursor, mirror)
		cursor, followed = next, followed+n
		if n == 0 && done {
			break
		}
	}
	want := map[int64]string{}
	all, err := store.List(ctx, plant.ListQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		want[p.ID] = p.Name
	}
	if !maps.Equal(mirror, want) {
		t.Fatalf("the follower's copy (%d plants, %d changes followed) differs from the store's (%d plants)", len(mirror), followed, len(want))
	}
	if followed == 0 {
		t.Fatal("the follower followed no change, though most writes came after the first page")
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestChangesOutlastTheServersTimeouts: a long poll and a stream last
// longer than the server's write timeout (here 100 ms) and still answer.
func TestChangesOutlastTheServersTimeouts(t *testing.T) {
	store := newFeedStore()
	srv := httptest.NewUnstartedServer(newFeedAPI(t, store, store, nil))
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	srv.Start()
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/plants/changes?wait=500ms")
	if err != nil {
		t.Fatalf("a long poll past the write timeout: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != emptyPage+cursorStart+`"}` {
		t.Fatalf("a long poll past the write timeout: %d %q %v", resp.StatusCode, body, err)
	}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/plants/changes", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(300 * time.Millisecond) // past both timeouts
	if _, err := store.Create(context.Background(), plant.Plant{ID: 1, Name: "fern"}); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(resp.Body)
	var got string
	for range 4 { // id, event, data, blank
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream after the timeouts: %q, then %v", got, err)
		}
		got += line
	}
	// The timestamp is the wall clock's here.
	start := "id: " + cursor1 + "\nevent: plant.created\ndata: " + `{"cursor":"` + cursor1 + `","type":"plant.created","id":1,"version":1,"timestamp":"`
	end := `Z","plant":{"id":1,"name":"fern"}}` + "\n\n"
	if !strings.HasPrefix(got, start) || !strings.HasSuffix(got, end) || len(got) != len(start)+len("2000-01-01T00:00:00.000")+len(end) {
		t.Fatalf("the stream after the timeouts: %q, want %q, a timestamp, %q", got, start, end)
	}
}
