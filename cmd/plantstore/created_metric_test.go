package main

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// plantstore_plants_created_total counts creations, on every store: a
// client's retry of a create (sequential, or racing its original) answers
// 200 with the plant again but stores nothing, so it is not counted; a
// conflict is not counted either.
func TestCreatedMetricCountsOnlyCreations(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		const fern = `{"id":1,"name":"fern","tag":"green"}`
		for range 3 {
			if r := s.post(t, fern); r.Status != http.StatusOK || string(r.Body) != `{"name":"fern","tag":"green"}` {
				t.Fatalf("POST %s = %d %s", fern, r.Status, r.Body)
			}
		}
		assertError(t, s.post(t, `{"id":1,"name":"moss"}`), http.StatusConflict)
		const racers = 8
		var wg sync.WaitGroup
		statuses := make([]int, racers)
		for i := range racers {
			wg.Go(func() {
				req := s.request(t, http.MethodPost, "/plants", testToken, "application/json", []byte(`{"id":2,"name":"ivy"}`))
				resp, err := s.Client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			})
		}
		wg.Wait()
		for i, status := range statuses {
			if status != http.StatusOK {
				t.Fatalf("racing create %d = %d, want 200", i, status)
			}
		}
		if want := "\nplantstore_plants_created_total 2\n"; !strings.Contains(scrape(t, s, false), want) {
			t.Fatalf("metrics lack %q: one creation each for plants 1 and 2", strings.TrimSpace(want))
		}
	})
}
