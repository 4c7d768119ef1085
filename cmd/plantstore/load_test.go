package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// apiLoad is several clients creating plants with unique ids, one request
// at a time each, until stopped, until the server goes away, or until each
// has sent its bound. It remembers every plant sent and every one answered
// 200, and counts the answers by status.
type apiLoad struct {
	mu           sync.Mutex
	cond         *sync.Cond
	sent, acked  map[int64]plant.Plant
	statuses     map[int]int
	noRetryAfter int   // 503 answers without a Retry-After header
	transportErr error // the first request that got no answer
	running      int
	stop         chan struct{}
	wg           sync.WaitGroup
}

// startAPILoad starts the clients. Ids are unique per round (negative for
// odd clients); a third of the plants have no tag, a third an empty one.
func startAPILoad(api string, round int64, workers, maxPerWorker int) *apiLoad {
	l := &apiLoad{
		sent: map[int64]plant.Plant{}, acked: map[int64]plant.Plant{}, statuses: map[int]int{},
		running: workers, stop: make(chan struct{}),
	}
	l.cond = sync.NewCond(&l.mu)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for w := range workers {
		l.wg.Go(func() {
			defer l.done()
			for i := range maxPerWorker {
				select {
				case <-l.stop:
					return
				default:
				}
				id := round<<40 | int64(w)<<32 | int64(i)
				if w%2 == 1 {
					id = -id - 1
				}
				p := plant.Plant{ID: id, Name: fmt.Sprintf("plant %d/%d/%d", round, w, i)}
				switch i % 3 {
				case 1:
					p.Tag = plant.StringPtr("")
				case 2:
					p.Tag = plant.StringPtr("tag-" + strconv.Itoa(w))
				}
				if !l.send(client, api, p) {
					return
				}
			}
		})
	}
	return l
}

// send posts one plant and records the answer; false when there was none.
func (l *apiLoad) send(client *http.Client, api string, p plant.Plant) bool {
	l.record(func() { l.sent[p.ID] = p })
	resp, err := client.Do(plantRequest(api, p))
	if err != nil {
		l.record(func() {
			if l.transportErr == nil {
				l.transportErr = err
			}
		})
		return false
	}
	resp.Body.Close()
	l.record(func() {
		l.statuses[resp.StatusCode]++
		switch resp.StatusCode {
		case http.StatusOK:
			l.acked[p.ID] = p
		case http.StatusServiceUnavailable:
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s <= 0 {
				l.noRetryAfter++
			}
		}
	})
	if resp.StatusCode == http.StatusServiceUnavailable {
		// Back off a little, as a client told to retry later does; not the
		// whole Retry-After, since the test is waiting for the recovery.
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// record changes the tallies under the lock and wakes the waiters.
func (l *apiLoad) record(change func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	change()
	l.cond.Broadcast()
}

func plantRequest(api string, p plant.Plant) *http.Request {
	req, err := http.NewRequest(http.MethodPost, api+"/plants", strings.NewReader(plantJSON(p)))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	return req
}

func postPlant(client *http.Client, api string, p plant.Plant) (int, error) {
	resp, err := client.Do(plantRequest(api, p))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func plantJSON(p plant.Plant) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%d,"name":%q`, p.ID, p.Name)
	if p.Tag != nil {
		fmt.Fprintf(&b, `,"tag":%q`, *p.Tag)
	}
	b.WriteString("}")
	return b.String()
}

func (l *apiLoad) done() { l.record(func() { l.running-- }) }

// waitFor waits until the answers so far satisfy cond (called with the
// load's counters), failing if the clients all stopped first.
func (l *apiLoad) waitFor(t *testing.T, what string, cond func(statuses map[int]int) bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for !cond(l.statuses) && l.running > 0 {
		l.cond.Wait()
	}
	if !cond(l.statuses) {
		t.Fatalf("the clients stopped before %s; answers by status %v, transport error %v", what, l.statuses, l.transportErr)
	}
}

// count is the number of answers with status so far.
func (l *apiLoad) count(status int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statuses[status]
}

// loadResult is what the clients saw.
type loadResult struct {
	sent, acked  map[int64]plant.Plant
	statuses     map[int]int
	noRetryAfter int
	transportErr error
}

// wait stops the clients (if still running) and returns what they saw.
func (l *apiLoad) wait() loadResult {
	l.mu.Lock()
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.mu.Unlock()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return loadResult{sent: l.sent, acked: l.acked, statuses: l.statuses, noRetryAfter: l.noRetryAfter, transportErr: l.transportErr}
}

// verifyStored checks a store after a crash: it must hold every
// acknowledged plant as sent, and nothing that was not sent.
func verifyStored(t *testing.T, s plant.Store, sent, acked map[int64]plant.Plant) {
	t.Helper()
	ctx := context.Background()
	for id, want := range acked {
		got, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("plant %d was answered 200 but is not stored: %v", id, err)
		}
		if !got.Equal(want) {
			t.Fatalf("plant %d was answered 200 as %+v but reads back as %+v", id, want, got)
		}
	}
	stored := 0
	var after *int64
	for {
		page, err := s.List(ctx, plant.ListQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range page {
			if want, ok := sent[got.ID]; !ok || !got.Equal(want) {
				t.Fatalf("stored plant %+v was never sent in that form", got)
			}
		}
		stored += len(page)
		if len(page) < 1000 {
			break
		}
		after = &page[len(page)-1].ID
	}
	if stored < len(acked) {
		t.Fatalf("%d plants stored, fewer than the %d acknowledged", stored, len(acked))
	}
}

// The crash tests' load: SIGKILL comes after crashMinAcked answers 200, at
// a random moment within the next 200 ms, crashCycles times over the same
// data; crashMaxPerCycle bounds a cycle whose kill comes late.
const (
	crashCycles      = 5
	crashWorkers     = 8
	crashMaxPerCycle = 4000 // per worker
	crashMinAcked    = 200
)

// runCrashCycles runs a plantstore child with env under concurrent create
// load, kills it with SIGKILL at a random moment, and repeats. After each
// kill, verify gets every create sent and every create answered 200 so far;
// at each restart the acknowledged plants are read back through the API.
func runCrashCycles(t *testing.T, env []string, verify func(sent, acked map[int64]plant.Plant)) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	sent := map[int64]plant.Plant{}  // every create sent, answered or not
	acked := map[int64]plant.Plant{} // every create answered 200

	for cycle := range crashCycles {
		p := startProcess(t, env...)
		recheckAcked(t, p.API, acked, rng)

		load := startAPILoad(p.API, int64(cycle), crashWorkers, crashMaxPerCycle)
		load.waitFor(t, strconv.Itoa(crashMinAcked)+" answers 200", func(s map[int]int) bool {
			return s[http.StatusOK] >= crashMinAcked
		})
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond) // a random moment under load
		if err := p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p.Wait(t, 30*time.Second)
		res := load.wait()
		if len(res.statuses) != 1 {
			t.Fatalf("cycle %d: answers by status %v, want only 200s before the kill", cycle, res.statuses)
		}
		maps.Copy(sent, res.sent)
		maps.Copy(acked, res.acked)
		t.Logf("cycle %d: %d creates answered 200 before SIGKILL, %d sent", cycle, len(res.acked), len(res.sent))
		verify(sent, acked)
	}
}
