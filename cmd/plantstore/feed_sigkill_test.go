package main

// A mirror of the store kept by the change feed across SIGKILLs of the real
// binary: it starts from a listing and the first page's
// Plantstore-Changes-Cursor, then follows the feed with long polls while
// writers create, update and delete a small set of plants, and the server
// (bolt) or one of two replicas (PostgreSQL) is killed and restarted. Once
// the writers are done, the mirror must be the store, exactly.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants"
)

// The mirror test's bounds: kill cycles, writers, the answered operations
// each writer makes per cycle, and the ids they share (few, so that updates
// and deletes mostly find a plant).
const (
	mirrorCycles       = 3
	mirrorWriters      = 3
	mirrorOpsPerWriter = 40
	mirrorIDs          = 24
)

func TestFeedMirrorSurvivesSIGKILL(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		runFeedMirror(t, 1, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+t.TempDir())
	})
	t.Run("postgres", func(t *testing.T) {
		runFeedMirror(t, 2, "PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL="+pgtest.NewDatabase(t))
	})
}

// runFeedMirror runs n replicas of the binary with env, and kills one of
// them (in turn) in the middle of each cycle's writes, restarting it at
// once. The mirror follows throughout, moving to another replica when its
// own does not answer.
func runFeedMirror(t *testing.T, n int, env ...string) {
	rs := &replicas{client: &http.Client{Timeout: 20 * time.Second}}
	procs := make([]*process, n)
	for i := range procs {
		procs[i] = startProcess(t, env...)
		rs.api = append(rs.api, procs[i].API)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	// Some plants before the listing, and writers running while it is
	// taken: the pages and the changes after the cursor overlap.
	first := startMirrorWriters(rs, seed, 0)
	first.waitAnswered(t, mirrorWriters*mirrorOpsPerWriter/4)
	m := newMirror()
	if err := m.list(rs); err != nil {
		t.Fatal(err)
	}
	follower := m.follow(rs)

	ops := map[string]int{}
	kills := 0
	for cycle := range mirrorCycles {
		w := first
		if cycle > 0 {
			w = startMirrorWriters(rs, seed, cycle)
		}
		w.waitAnswered(t, mirrorWriters*mirrorOpsPerWriter/2)
		victim := cycle % n
		if err := procs[victim].Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		procs[victim].Wait(t, 30*time.Second)
		kills++
		procs[victim] = startProcess(t, env...)
		rs.setAPI(victim, procs[victim].API)
		for k, v := range w.wait(t) {
			ops[k] += v
		}
	}
	if err := follower.stop(); err != nil {
		t.Fatal(err)
	}
	if ops["PUT 200"] == 0 || ops["DELETE 204"] == 0 || ops["POST 200"] == 0 {
		t.Fatalf("answered operations %v: the test needs creates, updates and deletes that changed a plant", ops)
	}

	// Every server up, the writers done: follow to the end, then compare.
	stored := m.catchUp(t, rs)
	for _, id := range slices.Sorted(maps.Keys(joinKeys(m.plants, stored))) {
		got, inMirror := m.plants[id]
		want, inStore := stored[id]
		switch {
		case !inStore:
			t.Errorf("plant %d: the mirror has %s, the store has none", id, got)
		case !inMirror:
			t.Errorf("plant %d: the store has %s, the mirror has none", id, want)
		case got != want:
			t.Errorf("plant %d: the mirror has %s, the store has %s", id, got, want)
		}
	}
	t.Logf("%d replica(s), %d SIGKILLs; answered operations %v; the mirror listed %d plants, then applied %d changes in %d pages "+
		"(%d followed during the writes, %d moves to another replica); %d plants stored at the end",
		n, kills, ops, m.listed, m.applied, m.pages, follower.followed, m.switches, len(stored))
}

// replicas are the API base URLs of the running servers, which change as
// they are restarted.
type replicas struct {
	client *http.Client
	mu     sync.Mutex
	api    []string
}

func (rs *replicas) setAPI(i int, api string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.api[i] = api
}

func (rs *replicas) apiOf(i int) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.api[i%len(rs.api)]
}

func (rs *replicas) count() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.api)
}

// errNoReplica: no server answered within the bound.
var errNoReplica = errors.New("no replica answered for a minute")

// send sends a request to replica prefer, moving on to the next one while
// a replica does not answer (down, killed mid-request) or answers 503
// (starting or stopping), and pausing after each round. It returns the
// answer and the replica that gave it.
func (rs *replicas) send(prefer int, method, path, body string) (*http.Response, []byte, int, error) {
	deadline := time.Now().Add(time.Minute)
	for i := prefer; ; i++ {
		req, err := http.NewRequest(method, rs.apiOf(i)+path, strings.NewReader(body))
		if err != nil {
			return nil, nil, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := rs.client.Do(req)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusServiceUnavailable {
				return resp, b, i % rs.count(), nil
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, 0, fmt.Errorf("%s %s: %w", method, path, errNoReplica)
		}
		if (i+1-prefer)%rs.count() == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// mirrorWriterSet is the writers of one cycle: each makes
// mirrorOpsPerWriter answered requests, a request without an answer being
// sent again (to another replica if there is one), as a client retries.
// The outcome of each (method and status) is counted.
type mirrorWriterSet struct {
	answered atomic.Int64
	done     sync.WaitGroup
	mu       sync.Mutex
	outcomes map[string]int
	err      error
}

func startMirrorWriters(rs *replicas, seed uint64, cycle int) *mirrorWriterSet {
	w := &mirrorWriterSet{outcomes: map[string]int{}}
	for writer := range mirrorWriters {
		rng := rand.New(rand.NewPCG(seed, uint64(cycle*mirrorWriters+writer))) //nolint:gosec // G115: small
		w.done.Go(func() {
			for op := range mirrorOpsPerWriter {
				method, path, body, ok := mirrorOp(rng, cycle, writer, op)
				resp, _, _, err := rs.send(writer, method, path, body)
				if err == nil && !ok[resp.StatusCode] {
					err = fmt.Errorf("%s %s %s answered %d", method, path, body, resp.StatusCode)
				}
				w.mu.Lock()
				if err != nil {
					w.err = err
					w.mu.Unlock()
					return
				}
				w.outcomes[method+" "+strconv.Itoa(resp.StatusCode)]++
				w.mu.Unlock()
				w.answered.Add(1)
			}
		})
	}
	return w
}

// mirrorOp is a writer's next request and the statuses it may answer: a
// create (409 when the id is stored with other content), a rename with or
// without a tag (404 when the id is not stored), or a delete (404 too).
// Names are unique per operation, so a change always changes something.
func mirrorOp(rng *rand.Rand, cycle, writer, op int) (method, path, body string, ok map[int]bool) {
	id := 1 + rng.IntN(mirrorIDs)
	name := fmt.Sprintf("c%d w%d op%d", cycle, writer, op)
	tag := ""
	if t := rng.IntN(3); t > 0 {
		tag = fmt.Sprintf(`,"tag":"t%d"`, t)
	}
	switch r := rng.IntN(20); {
	case r < 8:
		return http.MethodPost, "/plants", fmt.Sprintf(`{"id":%d,"name":%q%s}`, id, name, tag), map[int]bool{http.StatusOK: true, http.StatusConflict: true}
	case r < 15:
		return http.MethodPut, fmt.Sprintf("/plants/%d", id), fmt.Sprintf(`{"name":%q%s}`, name, tag), map[int]bool{http.StatusOK: true, http.StatusNotFound: true}
	default:
		return http.MethodDelete, fmt.Sprintf("/plants/%d", id), "", map[int]bool{http.StatusNoContent: true, http.StatusNotFound: true}
	}
}

// waitAnswered waits until n requests have been answered.
func (w *mirrorWriterSet) waitAnswered(t *testing.T, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d writes answered", n), func() bool {
		w.mu.Lock()
		err := w.err
		w.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		return w.answered.Load() >= int64(n)
	})
}

// wait waits for the writers to finish and returns the outcomes.
func (w *mirrorWriterSet) wait(t *testing.T) map[string]int {
	t.Helper()
	w.done.Wait()
	if w.err != nil {
		t.Fatal(w.err)
	}
	return w.outcomes
}

// mirror is a copy of the store built from a listing and the change feed,
// checking the feed as it goes: every cursor after the one before (so none
// repeats), a plant's changes in version order, each page's next its last
// change's cursor.
type mirror struct {
	plants   map[int64]string // id: the plant's JSON as the API gives it
	versions map[int64]int64  // id: the version of the last change applied
	cursor   string
	last     changes.Cursor // what cursor decodes to
	seen     map[string]bool
	listed   int
	applied  int
	pages    int
	switches int
	replica  int // the replica it follows on
}

func newMirror() *mirror {
	return &mirror{plants: map[int64]string{}, versions: map[int64]int64{}, seen: map[string]bool{}}
}

// list fills the mirror from a listing, page by page, and takes the first
// page's cursor to follow from.
func (m *mirror) list(rs *replicas) error {
	stored, cursor, err := listAll(rs, 0, 7)
	if err != nil {
		return err
	}
	if m.last, err = plants.ParseCursor("Plantstore-Changes-Cursor", cursor); err != nil {
		return err
	}
	m.plants, m.cursor, m.listed = stored, cursor, len(stored)
	return nil
}

// listAll reads every page of GET /plants of limit plants from replica
// prefer on: the plants by id, and the first page's cursor.
func listAll(rs *replicas, prefer, limit int) (stored map[int64]string, cursor string, err error) {
	stored = map[int64]string{}
	path := "/plants?limit=" + strconv.Itoa(limit)
	for {
		resp, body, _, err := rs.send(prefer, http.MethodGet, path, "")
		if err != nil {
			return nil, "", err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, "", fmt.Errorf("GET %s answered %d %s", path, resp.StatusCode, body)
		}
		if cursor == "" {
			cursor = resp.Header.Get("Plantstore-Changes-Cursor")
		}
		var page []json.RawMessage
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, "", fmt.Errorf("GET %s: %w", path, err)
		}
		for _, raw := range page {
			var p struct{ ID int64 }
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, "", err
			}
			stored[p.ID] = string(compactJSON(raw))
		}
		link := resp.Header.Get("Link")
		if link == "" {
			return stored, cursor, nil
		}
		next, _, ok := strings.Cut(strings.TrimPrefix(link, "<"), ">")
		if !ok {
			return nil, "", fmt.Errorf("GET %s: Link %q", path, link)
		}
		path = next
	}
}

// mirrorPage is a page of the feed as the mirror reads it, each change's
// plant as the page wrote it.
type mirrorPage struct {
	Changes []struct {
		Cursor  string          `json:"cursor"`
		Type    string          `json:"type"`
		ID      int64           `json:"id"`
		Version int64           `json:"version"`
		Plant   json.RawMessage `json:"plant"`
	} `json:"changes"`
	Next string `json:"next"`
}

// poll asks for the changes after the mirror's cursor, waiting up to wait,
// on the replica it follows, or the next one up, and applies them. It
// returns how many it applied.
func (m *mirror) poll(rs *replicas, wait time.Duration) (int, error) {
	after := m.cursor
	path := "/plants/changes?limit=5&wait=" + wait.String() + "&after=" + after
	resp, body, replica, err := rs.send(m.replica, http.MethodGet, path, "")
	if err != nil {
		return 0, err
	}
	if replica != m.replica {
		m.replica = replica
		m.switches++
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s answered %d %s", path, resp.StatusCode, body)
	}
	var page mirrorPage
	if err := json.Unmarshal(body, &page); err != nil {
		return 0, fmt.Errorf("GET %s: %w", path, err)
	}
	m.pages++
	for _, ch := range page.Changes {
		if err := m.apply(ch.Cursor, ch.Type, ch.ID, ch.Version, ch.Plant); err != nil {
			return 0, err
		}
	}
	if page.Next != m.cursor {
		return 0, fmt.Errorf("the page of %d changes after %s ends at %s but its next is %s", len(page.Changes), after, m.cursor, page.Next)
	}
	return len(page.Changes), nil
}

// apply checks one change against those before it and applies it.
func (m *mirror) apply(cursor, typ string, id, version int64, p json.RawMessage) error {
	if m.seen[cursor] {
		return fmt.Errorf("plant %d: %s version %d has cursor %s, which the feed gave before", id, typ, version, cursor)
	}
	m.seen[cursor] = true
	c, err := plants.ParseCursor("cursor", cursor)
	if err != nil {
		return fmt.Errorf("plant %d: %s version %d: %w", id, typ, version, err)
	}
	if !m.last.Less(c) {
		return fmt.Errorf("plant %d: %s version %d has cursor %+v, not after the previous change's %+v", id, typ, version, c, m.last)
	}
	before, known := m.versions[id]
	if known && version <= before {
		return fmt.Errorf("plant %d: %s version %d follows version %d of the same plant", id, typ, version, before)
	}
	switch typ {
	case "plant.created", "plant.updated":
		var got struct{ ID int64 }
		if err := json.Unmarshal(p, &got); err != nil || got.ID != id {
			return fmt.Errorf("plant %d: %s version %d carries plant %s", id, typ, version, p)
		}
		m.plants[id] = string(compactJSON(p))
	case "plant.deleted":
		if p != nil {
			return fmt.Errorf("plant %d: %s version %d carries plant %s", id, typ, version, p)
		}
		delete(m.plants, id)
	default:
		return fmt.Errorf("plant %d: version %d has type %q", id, version, typ)
	}
	m.versions[id], m.cursor, m.last = version, cursor, c
	m.applied++
	return nil
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// mirrorFollower is the mirror following the feed in long polls of a
// second until stopped.
type mirrorFollower struct {
	quit     chan struct{}
	done     chan struct{}
	err      error
	followed int
}

func (m *mirror) follow(rs *replicas) *mirrorFollower {
	f := &mirrorFollower{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for {
			select {
			case <-f.quit:
				return
			default:
			}
			n, err := m.poll(rs, time.Second)
			if err != nil {
				f.err = err
				return
			}
			f.followed += n
		}
	}()
	return f
}

// stop ends the following after its current poll and returns what failed
// it, if anything.
func (f *mirrorFollower) stop() error {
	close(f.quit)
	<-f.done
	return f.err
}

// catchUp follows until a page without changes, from each replica in turn,
// then lists the store, and returns the listing once a page after it
// brings nothing either: a change could commit between the empty page and
// the listing only if a killed replica's last statement were still
// running, which the next round lets end.
func (m *mirror) catchUp(t *testing.T, rs *replicas) map[int64]string {
	t.Helper()
	for round := 0; ; round++ {
		for i := 0; ; i++ {
			m.replica = i % rs.count()
			n, err := m.poll(rs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		stored, _, err := listAll(rs, round, 100)
		if err != nil {
			t.Fatal(err)
		}
		n, err := m.poll(rs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return stored
		}
		if round == 4 {
			t.Fatalf("the feed still brings changes after 5 rounds with the writers stopped (%d in the last)", n)
		}
	}
}

func joinKeys(a, b map[int64]string) map[int64]bool {
	keys := map[int64]bool{}
	for id := range a {
		keys[id] = true
	}
	for id := range b {
		keys[id] = true
	}
	return keys
}
