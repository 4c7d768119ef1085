package main

// The crash tests' second client: it renames and deletes plants stored in
// earlier cycles while the creates run, and the check that an envelope
// endpoint got every acknowledged change, in version order per plant.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// plantChange is one change as a client made it: a create or a PUT (the
// plant as it left it) or a DELETE (the id alone).
type plantChange struct {
	event string // plant.created, plant.updated or plant.deleted
	p     plant.Plant
}

// body is the envelope's data.plant the change must arrive with ("" for a
// delete).
func (c plantChange) body() string {
	if c.event == "plant.deleted" {
		return ""
	}
	return plantJSON(c.p)
}

// changeLoad is one client renaming and deleting plants, one request at a
// time, until it has changed each of its targets once, is stopped, or the
// server goes away. It keeps the changes answered (200 for a PUT, 204 for a
// DELETE) and the plant whose change got no answer, whose fate is unknown.
type changeLoad struct {
	mu      sync.Mutex
	acked   []plantChange
	unknown int64 // the plant whose change got no answer; 0 if none
	err     error // an answer neither the success nor a cut could give
	stop    chan struct{}
	done    chan struct{}
}

// startChangeLoad changes targets in order: every third is deleted, the
// others renamed (their tag removed, as a PUT without one does).
func startChangeLoad(api string, cycle int, targets []int64) *changeLoad {
	l := &changeLoad{stop: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: 30 * time.Second}
	go func() {
		defer close(l.done)
		for i, id := range targets {
			select {
			case <-l.stop:
				return
			default:
			}
			c := plantChange{event: "plant.updated", p: plant.Plant{ID: id, Name: fmt.Sprintf("renamed %d/%d", cycle, i)}}
			method, body, want := http.MethodPut, fmt.Sprintf(`{"name":%q}`, c.p.Name), http.StatusOK
			if i%3 == 0 {
				c = plantChange{event: "plant.deleted", p: plant.Plant{ID: id}}
				method, body, want = http.MethodDelete, "", http.StatusNoContent
			}
			req, err := http.NewRequest(method, fmt.Sprintf("%s/plants/%d", api, id), strings.NewReader(body))
			if err != nil {
				panic(err)
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err != nil {
				l.mu.Lock()
				l.unknown = id
				l.mu.Unlock()
				return
			}
			resp.Body.Close()
			l.mu.Lock()
			if resp.StatusCode != want {
				l.err = fmt.Errorf("%s plant %d answered %d, want %d", method, id, resp.StatusCode, want)
				l.mu.Unlock()
				return
			}
			l.acked = append(l.acked, c)
			l.mu.Unlock()
		}
	}()
	return l
}

// wait stops the client and returns the changes answered, and the plant
// whose change got no answer (0 if none); it fails the test on any other
// answer.
func (l *changeLoad) wait(t *testing.T) ([]plantChange, int64) {
	t.Helper()
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.acked, l.unknown
}

// plantHistory is what the clients know of each plant: its acknowledged
// changes in order, and whether it may still be changed (stored, and its
// fate known).
type plantHistory struct {
	changes map[int64][]plantChange
	alive   map[int64]bool
}

func newPlantHistory() *plantHistory {
	return &plantHistory{changes: map[int64][]plantChange{}, alive: map[int64]bool{}}
}

func (h *plantHistory) created(acked map[int64]plant.Plant) {
	for id, p := range acked {
		h.changes[id] = append(h.changes[id], plantChange{event: "plant.created", p: p})
		h.alive[id] = true
	}
}

func (h *plantHistory) changed(acked []plantChange, unknown int64) {
	for _, c := range acked {
		h.changes[c.p.ID] = append(h.changes[c.p.ID], c)
		if c.event == "plant.deleted" {
			delete(h.alive, c.p.ID)
		}
	}
	delete(h.alive, unknown)
}

// targets is at most n plants to change next, in id order.
func (h *plantHistory) targets(n int) []int64 {
	var ids []int64
	for id := range h.alive {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids[:min(n, len(ids))]
}

// count is the number of acknowledged changes by event.
func (h *plantHistory) count() map[string]int {
	n := map[string]int{}
	for _, cs := range h.changes {
		for _, c := range cs {
			n[c.event]++
		}
	}
	return n
}

// envelopeEvent is an envelope as the endpoint got it.
type envelopeEvent struct {
	id      string // webhook-id
	event   string
	version int64
	body    string // data.plant, "" for a delete
}

// envelopeEvents reads every 2xx'd request r got as an envelope, checking
// each verified and that a duplicate (one webhook-id again) carried the
// very same bytes; it returns each event once, by plant, in version order.
func envelopeEvents(t *testing.T, r *webhookstest.Receiver) map[int64][]envelopeEvent {
	t.Helper()
	bodies := map[string]string{}
	byPlant := map[int64][]envelopeEvent{}
	for _, req := range r.Requests() {
		if req.Status != http.StatusOK {
			continue
		}
		if !req.Verified {
			t.Fatalf("request %s: signature did not verify", req.ID)
		}
		if first, seen := bodies[req.ID]; seen {
			if first != string(req.Body) {
				t.Fatalf("webhook-id %s sent as %s, then as %s: an envelope must be the same bytes on every attempt", req.ID, first, req.Body)
			}
			continue
		}
		bodies[req.ID] = string(req.Body)
		var e struct {
			Type string `json:"type"`
			Data struct {
				ID      int64           `json:"id"`
				Version int64           `json:"version"`
				Plant   json.RawMessage `json:"plant"`
			} `json:"data"`
		}
		if err := json.Unmarshal(req.Body, &e); err != nil || e.Data.Version <= 0 {
			t.Fatalf("request %s: %s is not an envelope with a version: %v", req.ID, req.Body, err)
		}
		byPlant[e.Data.ID] = append(byPlant[e.Data.ID], envelopeEvent{id: req.ID, event: e.Type, version: e.Data.Version, body: string(e.Data.Plant)})
	}
	for _, events := range byPlant {
		slices.SortFunc(events, func(a, b envelopeEvent) int { return cmp.Compare(a.version, b.version) })
	}
	return byPlant
}

// missingChanges counts the acknowledged changes r has not got, and fails
// the test when what it got breaks their order: each plant's acknowledged
// changes must arrive with increasing versions, in the order they were
// acknowledged, with no two events of one version. Events of changes cut
// by a kill (committed, never answered) may sit between them.
func missingChanges(t *testing.T, r *webhookstest.Receiver, h *plantHistory) int {
	t.Helper()
	got := envelopeEvents(t, r)
	missing := 0
	for id, changes := range h.changes {
		events := got[id]
		for i := 1; i < len(events); i++ {
			if events[i].version == events[i-1].version {
				t.Fatalf("plant %d: events %s and %s share version %d", id, events[i-1].id, events[i].id, events[i].version)
			}
		}
		next := 0 // acknowledged changes are found in order
		for i, c := range changes {
			found := false
			for next < len(events) && !found {
				e := events[next]
				next++
				found = e.event == c.event && e.body == c.body()
			}
			if !found { // this one and the rest: none can be found after it
				missing += len(changes) - i
				break
			}
		}
	}
	return missing
}

// waitForChanges waits, looking every 50 ms, until r has every
// acknowledged change of h.
func waitForChanges(t *testing.T, r *webhookstest.Receiver, h *plantHistory, within time.Duration) {
	t.Helper()
	poll.Wait(t, 50*time.Millisecond, within, "every acknowledged change at the envelope endpoint, in order", func() (bool, error) {
		missing := missingChanges(t, r, h)
		return missing == 0, fmt.Errorf("%d of the acknowledged changes %v missing", missing, h.count())
	})
}
