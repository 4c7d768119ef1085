package main

// The bulk import on every store, through the batches a store that has
// them creates the lines in (bolt's transactions, postgres's COPY): the
// per-line answers of a mix of lines, and a server killed with SIGKILL
// mid-import, then the import again.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestImportAnswersEachLineOnEveryStore: one stream of new plants,
// identical ones, a conflicting one, a line repeating an id of the stream
// (identical, then different), a bad line and a blank one is answered
// line by line as the single create would answer each, in order, on every
// store; the feed then holds exactly one change per plant created.
func TestImportAnswersEachLineOnEveryStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		stored := plant.Plant{ID: 9, Name: "stored", Tag: plant.StringPtr("s")}
		for _, body := range []string{`{"id":9,"name":"stored","tag":"s"}`, `{"id":5,"name":"five"}`} {
			if r := s.post(t, body); r.Status != http.StatusOK {
				t.Fatalf("POST %s = %d %s", body, r.Status, r.Body)
			}
		}
		bad := s.post(t, `[1]`)
		if bad.Status != http.StatusBadRequest {
			t.Fatalf("POST [1] = %d %s, want 400", bad.Status, bad.Body)
		}
		badMessage := strings.Replace(strings.TrimSuffix(strings.TrimPrefix(string(bad.Body), `{"error":400,"message":"`), `"}`), "request body", "the line", 1)

		lines := []string{
			`{"id":1,"name":"one"}`,
			`{"id":5,"name":"five"}`,
			`{"id":9,"name":"other"}`,
			`{"id":1,"name":"one"}`,
			`{"id":1,"name":"uno"}`,
			`[1]`,
			"",
			`{"id":-4,"name":"minus four","tag":""}`,
			`{"id":2,"name":"two","tag":"t"}`,
		}
		one := plant.Plant{ID: 1, Name: "one"}
		want := `{"line":1,"id":1,"result":"created"}` + "\n" +
			`{"line":2,"id":5,"result":"unchanged"}` + "\n" +
			fmt.Sprintf(`{"line":3,"id":9,"result":"conflict","stored":{"id":9,"name":"stored","tag":"s"},"etag":%q}`, plants.ETag(stored)) + "\n" +
			`{"line":4,"id":1,"result":"unchanged"}` + "\n" +
			fmt.Sprintf(`{"line":5,"id":1,"result":"conflict","stored":{"id":1,"name":"one"},"etag":%q}`, plants.ETag(one)) + "\n" +
			fmt.Sprintf(`{"line":6,"result":"refused","error":{"error":400,"message":"line 6: %s"}}`, badMessage) + "\n" +
			`{"line":8,"id":-4,"result":"created"}` + "\n" +
			`{"line":9,"id":2,"result":"created"}` + "\n"
		r := s.do(t, s.request(t, http.MethodPost, "/plants:import", testToken, "application/x-ndjson", []byte(strings.Join(lines, "\n")+"\n")))
		if r.Status != http.StatusOK || string(r.Body) != want {
			t.Fatalf("import = %d\n%s\nwant 200\n%s", r.Status, r.Body, want)
		}
		want2 := map[int64]int{9: 1, 5: 1, 1: 1, -4: 1, 2: 1}
		if got := feedCreates(t, s.API, len(want2)); !equalCounts(got, want2) {
			t.Fatalf("the feed's creates by plant = %v, want %v", got, want2)
		}
	})
}

// feedCreates reads the whole change feed of api, which must hold n
// changes, all creates, and counts them by plant; then it checks that no
// change follows.
func feedCreates(t *testing.T, api string, n int) map[int64]int {
	t.Helper()
	c, err := client.New(api, client.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	counts := make(map[int64]int, n)
	seen, cursor := 0, ""
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ch, err := range c.Changes(ctx, "", client.ChangesOptions{Limit: 1000}) {
		if err != nil {
			t.Fatalf("the feed after %d changes: %v", seen, err)
		}
		if ch.Type != "plant.created" {
			t.Fatalf("change %+v, want creates only", ch)
		}
		counts[ch.ID]++
		seen++
		cursor = ch.Cursor
		if seen == n {
			break
		}
	}
	// Nothing more: a change there would be answered at once.
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for ch, err := range c.Changes(ctx, cursor, client.ChangesOptions{Wait: time.Second}) {
		if err == nil {
			t.Fatalf("a change past the %d expected: %+v", n, ch)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the feed past its end: %v", err)
		}
		break
	}
	return counts
}

func equalCounts(a, b map[int64]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestImportAfterSIGKILLHoldsEachPlantOnce: a server on bolt, and one on
// postgres, is killed with SIGKILL in the middle of an import of large
// batches; restarted on the same data, it holds some of the plants, each
// batch all or nothing. The import again creates exactly the others and
// answers the rest unchanged; the store then equals the file, and its
// feed holds exactly one create per plant, whichever run made it.
func TestImportAfterSIGKILLHoldsEachPlantOnce(t *testing.T) {
	clearEnv(t)
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		testImportAfterSIGKILL(t, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+t.TempDir())
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testImportAfterSIGKILL(t, "PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL="+pgtest.NewDatabase(t))
	})
}

func testImportAfterSIGKILL(t *testing.T, env ...string) {
	const n = 100_000
	file, content, _ := writeImportFile(t, n)
	p := startProcess(t, env...)
	first := make(chan int, 1)
	go func() {
		code, _, _ := importCLI(p.API, file)
		first <- code
	}()
	waitCreated(t, p.Admin, n/5)
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.Wait(t, 30*time.Second)
	if code := <-first; code != 1 {
		t.Fatalf("the import whose server was killed = exit %d, want 1", code)
	}

	p = startProcess(t, env...)
	stored := storedCount(t, p.API)
	if stored == 0 || stored == n {
		t.Fatalf("%d of %d plants stored after the kill: it was not mid-import", stored, n)
	}
	code, stdout, stderr := importCLI(p.API, file)
	if want := wantCounts(n-stored, stored); code != 0 || stdout != want || stderr != "" {
		t.Fatalf("second import = exit %d, stdout %q, stderr %q; want exit 0, stdout %q", code, stdout, stderr, want)
	}
	checkStoreEqualsFile(t, p.API, content)
	counts := feedCreates(t, p.API, n)
	if len(counts) != n {
		t.Fatalf("the feed creates %d plants, want %d", len(counts), n)
	}
	for id, c := range counts {
		if c != 1 {
			t.Fatalf("plant %d: %d creates in the feed, want 1", id, c)
		}
	}
	t.Logf("%d plants stored before the kill", stored)
}
