package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
)

// The feed's filters, proved against the real app on every store, with
// two replicas on one PostgreSQL database: writes go through one, the
// followers read the other.

// feedReplicas starts the app on cfg's store and returns the server the
// writes go through and the one the followers read: on postgres two
// replicas of one database, on a cluster of its own (the feed shows a
// change once the cluster's older write transactions have ended, and other
// tests write on the shared one); on the other stores one server, both.
func feedReplicas(t *testing.T, cfg config) (writer, reader *testServer, pgURL string) {
	t.Helper()
	if cfg.Plants.Store != plants.StorePostgres {
		s := startServer(t, cfg)
		return s, s, ""
	}
	pgURL = pgtest.NewCluster(t).NewDatabase(t)
	cfg.Plants.Postgres.URL = pgURL
	return startServer(t, cfg), startServer(t, cfg), pgURL
}

// proofChange is a change of the feed as the tests compare it: every field
// it carries, the plant as the bytes the server wrote.
type proofChange struct {
	Cursor    string          `json:"cursor"`
	Type      string          `json:"type"`
	ID        int64           `json:"id"`
	Version   int64           `json:"version"`
	Timestamp string          `json:"timestamp"`
	Plant     json.RawMessage `json:"plant,omitempty"`
}

func (c proofChange) String() string {
	return fmt.Sprintf("%s %s %d v%d %s %s", c.Cursor, c.Type, c.ID, c.Version, c.Timestamp, c.Plant)
}

// tag is the plant's tag; nil for a deletion or a plant without one.
func (c proofChange) tag(t *testing.T) *string {
	t.Helper()
	if c.Plant == nil {
		return nil
	}
	var p struct {
		Tag *string `json:"tag"`
	}
	if err := json.Unmarshal(c.Plant, &p); err != nil {
		t.Fatalf("plant %s: %v", c.Plant, err)
	}
	return p.Tag
}

// restrictChange is the feed's filter rule, spelled from docs/changes.md:
// a tag keeps a change that leaves the plant in the tag as it is, drops a
// create with another tag, and gives every other change as the plant's
// deletion (id and version, no plant); types then keep their own.
func restrictChange(t *testing.T, c proofChange, tag *string, types []string) (proofChange, bool) {
	if tag != nil {
		if got := c.tag(t); got == nil || *got != *tag {
			if c.Type == "plant.created" {
				return c, false
			}
			c.Type, c.Plant = "plant.deleted", nil
		}
	}
	return c, len(types) == 0 || slices.Contains(types, c.Type)
}

// feedPageOf reads one page of the feed from s.
func feedPageOf(t *testing.T, s *testServer, query string) (changes []proofChange, next string) {
	t.Helper()
	r := s.do(t, s.request(t, http.MethodGet, "/plants/changes?"+query, testToken, "", nil))
	var page struct {
		Changes []proofChange `json:"changes"`
		Next    string        `json:"next"`
	}
	if r.Status != http.StatusOK {
		t.Fatalf("GET /plants/changes?%s = %d %s", query, r.Status, r.Body)
	}
	r.JSON(t, &page)
	return page.Changes, page.Next
}

// followPagesTo follows the feed of s with query from after, in small
// pages, until a page's next is until; it returns every change given.
func followPagesTo(t *testing.T, s *testServer, after, until, query string) []proofChange {
	t.Helper()
	var all []proofChange
	for range 10000 { // a bound on a hang, far above the pages it takes
		if after == until {
			return all
		}
		page, next := feedPageOf(t, s, "limit=5&after="+after+query)
		if next == after { // nothing read: shown on this replica a little later
			page, next = feedPageOf(t, s, "limit=5&wait=1s&after="+after+query)
		}
		all, after = append(all, page...), next
	}
	t.Fatalf("following %q from %s never reached %s", query, after, until)
	return nil
}

// headOf is the Plantstore-Changes-Cursor of a listing of s.
func headOf(t *testing.T, s *testServer) string {
	t.Helper()
	r := s.do(t, s.request(t, http.MethodGet, "/plants?limit=1", testToken, "", nil))
	if r.Status != http.StatusOK {
		t.Fatalf("GET /plants = %d %s", r.Status, r.Body)
	}
	return r.Header.Get("Plantstore-Changes-Cursor")
}

// randomWrites runs writers at once through c, each on plants of its own
// (so that each plant's changes are in a known order): creates, updates
// that move the plant between the tags a, b and none (each with a new
// name, so every update is a change), and deletes. It returns each plant's
// changes as "type name tag", in order, and how many there were.
func randomWrites(t *testing.T, c *client.Client, writers, opsEach int) (map[int64][]string, int) {
	t.Helper()
	tags := []*string{nil, new("a"), new("b")}
	spell := func(typ string, p client.Plant) string {
		if typ == "plant.deleted" {
			return typ
		}
		tag := "-"
		if p.Tag != nil {
			tag = *p.Tag
		}
		return typ + " " + p.Name + " " + tag
	}
	made := make([]map[int64][]string, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(40, uint64(w))) //nolint:gosec // G404: a seeded sequence, not a secret
			mine, held := map[int64][]string{}, map[int64]bool{}
			for i := range opsEach {
				id := int64(w*100) + rng.Int64N(5) + 1
				p := client.Plant{ID: id, Name: fmt.Sprintf("w%d-%d", w, i), Tag: tags[rng.IntN(len(tags))]}
				var err error
				var typ string
				switch op := rng.IntN(3); {
				case !held[id]:
					typ, err = "plant.created", c.Create(context.Background(), p)
					held[id] = true
				case op == 0:
					typ, err = "plant.deleted", c.Delete(context.Background(), id, "")
					held[id] = false
				default:
					typ = "plant.updated"
					_, err = c.Update(context.Background(), p, "")
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s of plant %d: %w", typ, id, err)
					return
				}
				mine[id] = append(mine[id], spell(typ, p))
			}
			made[w] = mine
		})
	}
	wg.Wait()
	all, n := map[int64][]string{}, 0
	for w := range writers {
		if errs[w] != nil {
			t.Fatal(errs[w])
		}
		for id, ch := range made[w] {
			all[id] = ch
			n += len(ch)
		}
	}
	return all, n
}

// TestFilteredFeedIsTheFeedRestricted: over random writes by concurrent
// writers (creates, updates moving plants between tags, deletes), every
// filter's history on the reading replica, as pages and as a stream, is
// exactly its unfiltered history restricted by the documented rule, with
// the same cursors; the unfiltered history holds each plant's changes in
// the order they were made, versions increasing; and a mirror of a tag
// built from its filtered history holds exactly the store's plants with
// that tag.
func TestFilteredFeedIsTheFeedRestricted(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		writer, reader, _ := feedReplicas(t, cfg)
		start := headOf(t, reader)
		made, total := randomWrites(t, newTestClient(t, writer), 4, 60)

		// The unfiltered history, up to the writes' last change.
		var all []proofChange
		for after, pages := start, 0; len(all) < total; pages++ {
			if pages == 10000 { // a bound on a hang, far above the pages it takes
				t.Fatalf("the feed gave %d changes in %d pages, the writers made %d", len(all), pages, total)
			}
			page, next := feedPageOf(t, reader, "limit=7&wait=1s&after="+after)
			all, after = append(all, page...), next
		}
		if len(all) != total {
			t.Fatalf("the feed gave %d changes, the writers made %d", len(all), total)
		}
		end := all[len(all)-1].Cursor
		perPlant := map[int64][]string{}
		lastVersion := map[int64]int64{}
		for _, c := range all {
			spelled := c.Type
			if c.Plant != nil {
				var p client.Plant
				if err := json.Unmarshal(c.Plant, &p); err != nil {
					t.Fatal(err)
				}
				tag := "-"
				if p.Tag != nil {
					tag = *p.Tag
				}
				spelled += " " + p.Name + " " + tag
			}
			perPlant[c.ID] = append(perPlant[c.ID], spelled)
			if c.Version <= lastVersion[c.ID] {
				t.Fatalf("plant %d: version %d after %d", c.ID, c.Version, lastVersion[c.ID])
			}
			lastVersion[c.ID] = c.Version
		}
		for id, want := range made {
			if !slices.Equal(perPlant[id], want) {
				t.Fatalf("plant %d's changes in the feed:\n%q\nwant, as made:\n%q", id, perPlant[id], want)
			}
		}

		for _, f := range []struct {
			query string
			tag   *string
			types []string
		}{
			{"&tag=a", new("a"), nil},
			{"&tag=b&types=plant.deleted", new("b"), []string{"plant.deleted"}},
			{"&types=plant.updated", nil, []string{"plant.updated"}},
			{"&types=plant.created,plant.deleted", nil, []string{"plant.created", "plant.deleted"}},
			{"&tag=a&types=plant.created,plant.updated", new("a"), []string{"plant.created", "plant.updated"}},
		} {
			var want []string
			for _, c := range all {
				if c, ok := restrictChange(t, c, f.tag, f.types); ok {
					want = append(want, c.String())
				}
			}
			var got []string
			for _, c := range followPagesTo(t, reader, start, end, f.query) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %d changes, want %d:\n got %s\nwant %s", f.query, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}

		// The tag's stream gives the same changes as its pages.
		var want []string
		mirror := map[int64]string{}
		for _, c := range all {
			if c, ok := restrictChange(t, c, new("a"), nil); ok {
				want = append(want, c.String())
				if c.Plant == nil {
					delete(mirror, c.ID)
				} else {
					mirror[c.ID] = string(c.Plant)
				}
			}
		}
		if got := streamTo(t, reader, "tag=a&after="+start, end); !slices.Equal(got, want) {
			t.Errorf("tag a's stream: %d changes, want %d:\n got %s\nwant %s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		r := reader.do(t, reader.request(t, http.MethodGet, "/plants?tag=a&limit=1000", testToken, "", nil))
		var listed []json.RawMessage
		r.JSON(t, &listed)
		if len(listed) != len(mirror) || len(listed) == 0 {
			t.Fatalf("tag a: the mirror holds %d plants %v, the store %d %s", len(mirror), mirror, len(listed), r.Body)
		}
		for _, p := range listed {
			var id struct{ ID int64 }
			if err := json.Unmarshal(p, &id); err != nil {
				t.Fatal(err)
			}
			if mirror[id.ID] != string(p) {
				t.Fatalf("tag a: the mirror's plant %d is %s, the store's %s", id.ID, mirror[id.ID], p)
			}
		}
	})
}

// streamTo reads the feed of s as a stream with query until an event's id
// is until, and returns its changes (not its bookmarks) spelled as
// proofChange.String.
func streamTo(t *testing.T, s *testServer, query, until string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang
	defer cancel()
	req := s.request(t, http.MethodGet, "/plants/changes?"+query, testToken, "", nil).WithContext(ctx)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream %s: %d", query, resp.StatusCode)
	}
	var got []string
	var id, event string
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event != "bookmark":
			var c proofChange
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &c); err != nil {
				t.Fatalf("stream %s: %q: %v", query, line, err)
			}
			if c.Cursor != id || c.Type != event {
				t.Fatalf("stream %s: event %s %s carries %s", query, id, event, c)
			}
			got = append(got, c.String())
		case line == "" && id == until:
			return got
		}
	}
	t.Fatalf("stream %s ended before %s: %v, after %q", query, until, lines.Err(), got)
	return nil
}
