package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/changes"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newWatchServer serves the real plants routes, the feed following store,
// on loopback; polled is closed at the first request for the feed.
func newWatchServer(t *testing.T, store *memstore.Store) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	h, err := plants.NewHandlers(store, store, plants.DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	rt := httpserver.NewRouter(append(h.Routes(), plants.NewFeed(store, nil, zap.NewNop()).Routes()...))
	api := rt.Resolve(rt.Dispatch())
	polled := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plants/changes" {
			once.Do(func() { close(polled) })
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, polled
}

// watching is a `plants watch` running in the background.
type watching struct {
	lines  *bufio.Reader
	stop   context.CancelFunc
	ended  chan int
	stderr *bytes.Buffer
}

func startWatch(t *testing.T, srv *httptest.Server, args ...string) *watching {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	out, in := io.Pipe()
	w := &watching{lines: bufio.NewReader(out), stop: stop, ended: make(chan int, 1), stderr: &bytes.Buffer{}}
	args = append([]string{"watch", "--url", srv.URL, "--token", "secret-token"}, args...)
	go func() {
		code := runPlants(ctx, args, IO{Stdout: in, Stderr: w.stderr, Getenv: func(string) string { return "" }})
		in.Close()
		w.ended <- code
	}()
	t.Cleanup(stop)
	return w
}

// next reads the next line watch printed.
func (w *watching) next(t *testing.T) string {
	t.Helper()
	line, err := w.lines.ReadString('\n')
	if err != nil {
		t.Fatalf("watch printed %q, then %v", line, err)
	}
	return line
}

// wantLines are the changes after cursor exactly as the feed gives them,
// one a line.
func wantLines(t *testing.T, srv *httptest.Server, after changes.Cursor) []string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/plants/changes?after="+plants.EncodeCursor(after), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct{ Changes []json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(page.Changes))
	for i, c := range page.Changes {
		lines[i] = string(c) + "\n"
	}
	return lines
}

// TestWatchPrintsEachChange: watch starts from now, prints each later
// change as a line, resumes after a printed cursor, and stops cleanly
// when interrupted.
func TestWatchPrintsEachChange(t *testing.T) {
	store := memstore.New()
	ctx := context.Background()
	for _, p := range []plant.Plant{{ID: 1, Name: "fern"}, {ID: 2, Name: "ivy"}} {
		if _, err := store.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	srv, polled := newWatchServer(t, store)
	w := startWatch(t, srv, "--wait", "2s")
	<-polled // it took its cursor from the listing: the changes from now on are its
	if _, err := store.Create(ctx, plant.Plant{ID: 3, Name: "moss <&>", Tag: plant.StringPtr("")}); err != nil {
		t.Fatal(err)
	}
	if err := store.Replace(ctx, plant.Plant{ID: 1, Name: "fern", Tag: plant.StringPtr("shade")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, 2); err != nil {
		t.Fatal(err)
	}
	want := wantLines(t, srv, changes.Cursor{History: store.History(), Version: 2})
	if len(want) != 3 || !strings.Contains(want[0], `"name":"moss <&>","tag":""`) || strings.Contains(want[2], `"plant"`) {
		t.Fatalf("the changes to print: %q", want)
	}
	for i := range want {
		if got := w.next(t); got != want[i] {
			t.Fatalf("line %d = %q, want %q", i+1, got, want[i])
		}
	}
	w.stop()
	if code := <-w.ended; code != 0 || w.stderr.String() != "" {
		t.Fatalf("interrupted: exit %d, stderr %q; want 0 and nothing", code, w.stderr)
	}

	var first change
	if err := json.Unmarshal([]byte(want[0]), &first); err != nil {
		t.Fatal(err)
	}
	w = startWatch(t, srv, "--after", first.Cursor)
	for i := 1; i < len(want); i++ {
		if got := w.next(t); got != want[i] {
			t.Fatalf("resumed: line %d = %q, want %q", i, got, want[i])
		}
	}
	w.stop()
	if code := <-w.ended; code != 0 {
		t.Fatalf("interrupted: exit %d", code)
	}
}

// TestWatchCursorGone: a cursor past the retention window fails with the
// server's advice, exit 1.
func TestWatchCursorGone(t *testing.T) {
	store := memstore.New()
	for id := range int64(3) {
		if _, err := store.Create(context.Background(), plant.Plant{ID: id, Name: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.PruneChanges(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	srv, _ := newWatchServer(t, store)
	w := startWatch(t, srv, "--after", plants.EncodeCursor(changes.Cursor{History: store.History(), Version: 1}))
	if rest, _ := io.ReadAll(w.lines); len(rest) != 0 {
		t.Fatalf("printed %q", rest)
	}
	const msg = "plantstore plants watch: 410 Gone: the cursor is older than the change log's retention window: list the plants again (GET /plants) and follow the changes from the listing's Plantstore-Changes-Cursor header\n"
	if code := <-w.ended; code != 1 || w.stderr.String() != msg {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, w.stderr, msg)
	}
}

// TestWatchFilters: with --tag and --types, watch prints exactly the
// changes that match both, as the feed gives them.
func TestWatchFilters(t *testing.T) {
	store := memstore.New()
	ctx := context.Background()
	srv, polled := newWatchServer(t, store)
	w := startWatch(t, srv, "--wait", "2s", "--tag", "x", "--types", "plant.created")
	<-polled
	x, y := plant.StringPtr("x"), plant.StringPtr("y")
	for _, write := range []func() error{
		func() error { _, err := store.Create(ctx, plant.Plant{ID: 1, Name: "fern", Tag: x}); return err }, // v1: printed
		func() error { _, err := store.Create(ctx, plant.Plant{ID: 2, Name: "ivy", Tag: y}); return err },  // v2: another tag
		func() error { return store.Replace(ctx, plant.Plant{ID: 1, Name: "fern 2", Tag: x}, nil) },        // v3: an update
		func() error { _, err := store.Create(ctx, plant.Plant{ID: 3, Name: "moss"}); return err },         // v4: untagged
		func() error { _, err := store.Create(ctx, plant.Plant{ID: 4, Name: "sage", Tag: x}); return err }, // v5: printed
		func() error { return store.Delete(ctx, 1) },                                                       // v6: a delete
		func() error { _, err := store.Create(ctx, plant.Plant{ID: 5, Name: "rue", Tag: x}); return err },  // v7: printed
	} {
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	all := wantLines(t, srv, changes.Cursor{History: store.History()})
	if len(all) != 7 {
		t.Fatalf("the feed: %q", all)
	}
	for _, want := range []string{all[0], all[4], all[6]} {
		if got := w.next(t); got != want {
			t.Fatalf("printed %q, want %q", got, want)
		}
	}
	w.stop()
	if rest, _ := io.ReadAll(w.lines); len(rest) != 0 {
		t.Fatalf("then printed %q", rest)
	}
	if code := <-w.ended; code != 0 || w.stderr.String() != "" {
		t.Fatalf("interrupted: exit %d, stderr %q; want 0 and nothing", code, w.stderr)
	}
}

// TestWatchUsageErrors: a bad flag is one line and exit 2, before any
// request.
func TestWatchUsageErrors(t *testing.T) {
	for args, msg := range map[string]string{
		"--wait 0s":  "--wait 0s: want more than 0s and at most 1m0s",
		"--wait 61s": "--wait 1m1s: want more than 0s and at most 1m0s",
		"-o table":   "unknown flag --o (see plantstore plants watch --help)",
		"--after 17": `--after "17": not a cursor (the "cursor" of a line watch printed)`,
		"--after AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+Q": `--after "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+Q": not a cursor (the "cursor" of a line watch printed)`,
		"5":                                   "takes no arguments",
		"--types plant.eaten":                 `--types "plant.eaten": "plant.eaten" is not one of plant.created, plant.updated, plant.deleted`,
		"--types plant.created,":              `--types "plant.created,": "" is not one of plant.created, plant.updated, plant.deleted`,
		"--types plant.deleted,plant.deleted": `--types "plant.deleted,plant.deleted": plant.deleted given twice`,
		"--tag=":                              "--tag '': want a tag (the feed follows no empty tag)",
		"--snapshot --after AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA": "--snapshot and --after: a snapshot starts from the current plants; resume one with --after alone",
		"--snapshot --types plant.deleted":                    `--snapshot with --types "plant.deleted": a snapshot's plants are plant.created lines; list that type`,
	} {
		var stdout, stderr bytes.Buffer
		full := append([]string{"watch", "--url", "http://127.0.0.1:1", "--token", "secret-token"}, strings.Fields(args)...)
		code := runPlants(context.Background(), full, IO{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
		if want := "plantstore plants watch: " + msg + "\n"; code != 2 || stdout.Len() != 0 || stderr.String() != want {
			t.Errorf("watch %s = exit %d, stdout %q, stderr %q; want 2 and %q", args, code, stdout.String(), stderr.String(), want)
		}
	}
}

// TestWatchSnapshot: --snapshot prints every current plant (of --tag) as a
// plant.created line marked "snapshot":true, at the snapshot's version,
// then the changes from there on.
func TestWatchSnapshot(t *testing.T) {
	store := memstore.New()
	ctx := context.Background()
	x := plant.StringPtr("x")
	for _, p := range []plant.Plant{{ID: 1, Name: "fern", Tag: x}, {ID: 2, Name: "ivy"}, {ID: 3, Name: "moss", Tag: x}} {
		if _, err := store.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	srv, polled := newWatchServer(t, store)
	w := startWatch(t, srv, "--wait", "2s", "--tag", "x", "--snapshot")
	for _, want := range []string{
		`{"cursor":"%s","type":"plant.created","id":1,"version":3,"timestamp":"%s","plant":{"id":1,"name":"fern","tag":"x"},"snapshot":true}` + "\n",
		`{"cursor":"%s","type":"plant.created","id":3,"version":3,"timestamp":"%s","plant":{"id":3,"name":"moss","tag":"x"},"snapshot":true}` + "\n",
	} {
		got := w.next(t)
		var line struct{ Cursor, Timestamp string }
		if err := json.Unmarshal([]byte(got), &line); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(want, line.Cursor, line.Timestamp); got != want || len(line.Cursor) != 55 {
			t.Fatalf("printed %q, want %q with a snapshot's cursor", got, want)
		}
	}
	<-polled
	if _, err := store.Create(ctx, plant.Plant{ID: 4, Name: "sage", Tag: x}); err != nil {
		t.Fatal(err)
	}
	all := wantLines(t, srv, changes.Cursor{History: store.History()})
	if got := w.next(t); got != all[3] {
		t.Fatalf("then printed %q, want %q", got, all[3])
	}
	w.stop()
	if code := <-w.ended; code != 0 || w.stderr.String() != "" {
		t.Fatalf("interrupted: exit %d, stderr %q; want 0 and nothing", code, w.stderr)
	}
}
