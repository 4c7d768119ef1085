package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
)

// snapshotPage is a page of a snapshot, as the feed answers it.
type snapshotPage struct {
	Changes []struct {
		Cursor   string          `json:"cursor"`
		Type     string          `json:"type"`
		ID       int64           `json:"id"`
		Version  int64           `json:"version"`
		Plant    json.RawMessage `json:"plant"`
		Snapshot bool            `json:"snapshot"`
	} `json:"changes"`
	Next     string `json:"next"`
	Snapshot string `json:"snapshot"`
}

// TestChangeFeedSnapshot runs snapshot=true in the real app on every store
// (each answer validated against the OpenAPI document): pages of a
// snapshot read while writers run, then the changes after it, leave a copy
// equal to the store's listing, each plant's versions increasing as given.
func TestChangeFeedSnapshot(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		if cfg.Plants.Store == plants.StorePostgres {
			cfg.Plants.Postgres.URL = pgtest.NewCluster(t).NewDatabase(t)
		}
		s := startServer(t, cfg)
		// A writer's create of a stored id is a 409, its update of a
		// deleted one a 404: the race it is there for.
		write := func(method, path, body string) {
			t.Helper()
			if r := s.do(t, s.request(t, method, path, testToken, "application/json", []byte(body))); r.Status/100 != 2 && r.Status != http.StatusNotFound && r.Status != http.StatusConflict {
				t.Errorf("%s %s = %d %s", method, path, r.Status, r.Body)
			}
		}
		for id := range 30 {
			write(http.MethodPost, "/plants", fmt.Sprintf(`{"id":%d,"name":"seed"}`, id))
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := (i * 7) % 40
				switch i % 3 {
				case 0:
					write(http.MethodPut, fmt.Sprintf("/plants/%d", id), fmt.Sprintf(`{"name":"w%d"}`, i))
				case 1:
					write(http.MethodPost, "/plants", fmt.Sprintf(`{"id":%d,"name":"n%d"}`, id, i))
				default:
					r := s.do(t, s.request(t, http.MethodDelete, fmt.Sprintf("/plants/%d", id), testToken, "", nil))
					if r.Status != http.StatusNoContent && r.Status != http.StatusNotFound {
						t.Errorf("DELETE = %d %s", r.Status, r.Body)
					}
				}
			}
		})
		mirror, versions := map[int64]string{}, map[int64]int64{}
		apply := func(page snapshotPage) {
			for _, ch := range page.Changes {
				if v, ok := versions[ch.ID]; ok && ch.Version <= v {
					t.Errorf("%s of %d v%d after v%d", ch.Type, ch.ID, ch.Version, v)
				}
				versions[ch.ID] = ch.Version
				if ch.Type == "plant.deleted" {
					delete(mirror, ch.ID)
				} else {
					mirror[ch.ID] = string(ch.Plant)
				}
			}
		}
		get := func(path string) snapshotPage {
			t.Helper()
			r := s.do(t, s.request(t, http.MethodGet, path, testToken, "", nil))
			if r.Status != http.StatusOK {
				t.Fatalf("GET %s = %d %s", path, r.Status, r.Body)
			}
			var page snapshotPage
			r.JSON(t, &page)
			return page
		}
		page := get("/plants/changes?snapshot=true&limit=4")
		pages := 1
		for apply(page); page.Snapshot != "complete"; pages++ {
			if page.Snapshot != "partial" || len(page.Next) != 55 {
				t.Fatalf("a page of a snapshot: snapshot %q next %q", page.Snapshot, page.Next)
			}
			page = get("/plants/changes?limit=4&after=" + page.Next)
			apply(page)
		}
		if pages < 3 || len(page.Next) != 32 {
			t.Fatalf("the snapshot ended after %d pages at %q", pages, page.Next)
		}
		close(stop)
		wg.Wait()
		head := s.do(t, s.request(t, http.MethodGet, "/plants?limit=1000", testToken, "", nil))
		for next := page.Next; next != head.Header.Get("Plantstore-Changes-Cursor"); {
			page = get("/plants/changes?limit=100&after=" + next)
			if len(page.Changes) == 0 {
				t.Fatalf("no change after %s, before the head", next)
			}
			apply(page)
			next = page.Next
		}
		var listed []map[string]any
		head.JSON(t, &listed)
		var want, got []string
		for _, p := range listed {
			b, _ := json.Marshal(p)
			want = append(want, string(b))
		}
		for id := range int64(40) {
			if p, ok := mirror[id]; ok {
				got = append(got, p)
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("the copy:\n%s\nthe store:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
