package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// IDWindow is the ids the clients use: Size ids from First, a window that
// moves on by one id every Step (never, when Step is 0). Few ids at a time
// make operations meet; moving on keeps each id's history short, and the
// checker's search, which is per id, small: a 10-minute run on 200 fixed
// ids gave each id some 9,000 operations and dozens of unknown outcomes,
// a search no memory holds.
type IDWindow struct {
	First int64 // 0 is 1
	Size  int
	Step  time.Duration
}

// Lo is the window's first id at t (since the run's start).
func (w IDWindow) Lo(t time.Duration) int64 {
	lo := max(w.First, 1)
	if w.Step > 0 {
		lo += int64(t / w.Step)
	}
	return lo
}

// IDs are the window's ids at t.
func (w IDWindow) IDs(t time.Duration) []int64 {
	lo := w.Lo(t)
	ids := make([]int64, w.Size)
	for i := range ids {
		ids[i] = lo + int64(i)
	}
	return ids
}

// Life is how long each id is in the window.
func (w IDWindow) Life() time.Duration { return time.Duration(w.Size) * w.Step }

// Workload is the clients' configuration.
type Workload struct {
	URL     string // the load balancer
	Clients int    // concurrent clients, each one operation at a time
	IDs     IDWindow
	Seed    uint64
	MaxOps  int           // per client: a bound on the loop besides ctx
	Timeout time.Duration // per request; past it the answer is unknown
}

// names is how many different plants each id may hold: creates of the same
// id with different names conflict.
const names = 3

// updates is how many further plants an update may put under an id:
// plantFor(id, names) and on. No create sends them, so an update never
// makes an id hold a plant a create sends: a create answered 200 always
// found its plant stored by a create, which storesNeeded's count of webhook
// events rests on; a create meeting an updated plant is a 409.
const updates = 2

// plantFor is the k-th plant an id may hold. The tag follows from the name,
// so that list pages by tag see ids come and go.
func plantFor(id int64, k int) Plant {
	return Plant{ID: id, Name: "p" + strconv.FormatInt(id, 10) + "-" + strconv.Itoa(k), Tag: [...]string{"red", "green"}[(int(id)+k)%2]}
}

// Run runs the clients until ctx ends or each has done MaxOps operations,
// recording every operation in h.
func (w Workload) Run(ctx context.Context, h *History) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = w.Clients
	client := &http.Client{Timeout: w.Timeout, Transport: transport}
	defer transport.CloseIdleConnections()
	var wg sync.WaitGroup
	for c := range w.Clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(w.Seed, uint64(c)))
			seen := map[int64]Op{} // id: this client's latest get answered 200
			for n := 0; n < w.MaxOps && ctx.Err() == nil; n++ {
				op := w.next(rng, c, seen, w.IDs.Lo(h.Now()))
				w.do(client, h, &op)
				h.Add(op)
				if op.Kind == Get && op.Answer == OK && op.ETag != "" {
					seen[op.ID] = op
				}
				if pause := backoff(op); pause > 0 {
					// A client that met an outage waits a little, as a real
					// one would; it also keeps the unknown operations, the
					// checker's expensive part, from piling up on an id.
					select {
					case <-ctx.Done():
					case <-time.After(pause):
					}
				}
			}
		})
	}
	wg.Wait()
}

// next draws an operation: creates, updates and deletes to change ids, gets
// and list pages to watch them. An update is unconditional, or under
// If-Match with the ETag of this client's latest get of the id (current or
// stale by now), now and then "*" or a tag that names no plant.
func (w Workload) next(rng *rand.Rand, client int, seen map[int64]Op, lo int64) Op {
	id := lo + int64(rng.IntN(w.IDs.Size))
	switch r := rng.IntN(100); {
	case r < 30:
		p := plantFor(id, rng.IntN(names))
		return Op{Client: client, Kind: Create, ID: id, Name: p.Name, Tag: p.Tag}
	case r < 57:
		return Op{Client: client, Kind: Get, ID: id}
	case r < 73:
		return Op{Client: client, Kind: Delete, ID: id}
	case r < 87:
		p := plantFor(id, names+rng.IntN(updates))
		op := Op{Client: client, Kind: Update, ID: id, Name: p.Name, Tag: p.Tag}
		switch c := rng.IntN(10); {
		case c < 4: // unconditional
		case c < 5:
			op.IfMatch = "*"
		case c < 6:
			op.IfMatch = `"no-such-etag"`
		default:
			if g, ok := seen[id]; ok {
				op.IfMatch, op.Match = g.ETag, g.Got
			} else {
				op.IfMatch = "*"
			}
		}
		return op
	default:
		op := Op{Client: client, Kind: List, Tag: [...]string{"red", "green"}[rng.IntN(2)], Limit: 1 + rng.IntN(20)}
		switch {
		case rng.IntN(4) > 0:
			op.After, op.HasAfter = id, true
		case lo > 1:
			// From the window's start: the ids before it are done with.
			op.After, op.HasAfter = lo-1, true
		}
		return op
	}
}

func backoff(op Op) time.Duration {
	if op.Answer != Unknown {
		return 0
	}
	return 300 * time.Millisecond
}

// do sends op and fills in its times and answer.
func (w Workload) do(client *http.Client, h *History, op *Op) {
	var req *http.Request
	var err error
	switch op.Kind {
	case Create:
		body, _ := json.Marshal(map[string]any{"id": op.ID, "name": op.Name, "tag": op.Tag})
		req, err = http.NewRequest(http.MethodPost, w.URL+"/plants", bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	case Get:
		req, err = http.NewRequest(http.MethodGet, w.URL+"/plants/"+strconv.FormatInt(op.ID, 10), nil)
	case Delete:
		req, err = http.NewRequest(http.MethodDelete, w.URL+"/plants/"+strconv.FormatInt(op.ID, 10), nil)
	case Update:
		body, _ := json.Marshal(map[string]any{"name": op.Name, "tag": op.Tag})
		req, err = http.NewRequest(http.MethodPut, w.URL+"/plants/"+strconv.FormatInt(op.ID, 10), bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			if op.IfMatch != "" {
				req.Header.Set("If-Match", op.IfMatch)
			}
		}
	case List:
		q := url.Values{"tag": {op.Tag}, "limit": {strconv.Itoa(op.Limit)}}
		if op.HasAfter {
			q.Set("after", strconv.FormatInt(op.After, 10))
		}
		req, err = http.NewRequest(http.MethodGet, w.URL+"/plants?"+q.Encode(), nil)
	}
	if err != nil {
		panic(err) // a request of our own making
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	op.Call = h.Now()
	resp, err := client.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	op.Return = h.Now()
	if err != nil {
		op.Answer, op.Err = Unknown, err.Error()
		if resp != nil {
			op.Status = resp.StatusCode
		}
		return
	}
	op.Status = resp.StatusCode
	op.Replica = resp.Header.Get("X-Replica")
	op.Answer = classify(op, resp, body)
}

// classify reads an answer: what it says happened, or Unexpected with the
// reason in Err.
func classify(op *Op, resp *http.Response, body []byte) Answer {
	switch s := resp.StatusCode; {
	case s >= 500:
		if s == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			op.Err = "503 without Retry-After"
		}
		return Unknown
	case (op.Kind == Create || op.Kind == Update) && s == http.StatusOK:
		var p struct{ Name, Tag string }
		if json.Unmarshal(body, &p) != nil || p.Name != op.Name || p.Tag != op.Tag {
			op.Err = fmt.Sprintf("%s answered 200 with %s", op.Kind, body)
			return Unexpected
		}
		return OK
	case op.Kind == Update && s == http.StatusNotFound && op.IfMatch == "":
		return NotFound
	case op.Kind == Update && s == http.StatusPreconditionFailed && op.IfMatch != "":
		return PreconditionFailed
	case op.Kind == Create && s == http.StatusConflict:
		return Conflict
	case op.Kind == Get && s == http.StatusOK:
		var p struct {
			ID        int64
			Name, Tag string
		}
		if json.Unmarshal(body, &p) != nil || p.ID != op.ID {
			op.Err = fmt.Sprintf("get answered 200 with %s", body)
			return Unexpected
		}
		op.Got = Plant{ID: p.ID, Name: p.Name, Tag: p.Tag}
		op.ETag = resp.Header.Get("ETag")
		return OK
	case op.Kind == Delete && s == http.StatusNoContent:
		return OK
	case (op.Kind == Get || op.Kind == Delete) && s == http.StatusNotFound:
		return NotFound
	case op.Kind == List && s == http.StatusOK:
		var page []struct {
			ID        int64
			Name, Tag string
		}
		if err := json.Unmarshal(body, &page); err != nil {
			op.Err = fmt.Sprintf("list answered 200 with %s", body)
			return Unexpected
		}
		for _, p := range page {
			op.Page = append(op.Page, Plant{ID: p.ID, Name: p.Name, Tag: p.Tag})
		}
		op.More = resp.Header.Get("Link") != ""
		return OK
	}
	op.Err = fmt.Sprintf("%s answered %d: %s", op.Kind, resp.StatusCode, body)
	return Unexpected
}

// FinalReads reads every id a write was sent to once, after the faults
// healed: part of the history, so the checker holds them against every
// acknowledged write. A read whose answer is unknown is retried a few
// times. The reads go out on w.Clients connections, each id read by one of
// them (client numbers from w.Clients up, apart from the load's).
func (w Workload) FinalReads(ctx context.Context, h *History) {
	written := map[int64]bool{}
	for _, op := range h.Ops() {
		if op.Kind == Create || op.Kind == Update || op.Kind == Delete {
			written[op.ID] = true
		}
	}
	ids := make(chan int64)
	var wg sync.WaitGroup
	for c := range max(w.Clients, 1) {
		wg.Go(func() {
			client := &http.Client{Timeout: w.Timeout}
			for id := range ids {
				for try := 0; try < 5 && ctx.Err() == nil; try++ {
					op := Op{Client: w.Clients + c, Kind: Get, ID: id}
					w.do(client, h, &op)
					h.Add(op)
					if op.Answer != Unknown {
						break
					}
					time.Sleep(time.Second)
				}
			}
		})
	}
	for _, id := range slices.Sorted(maps.Keys(written)) {
		ids <- id
	}
	close(ids)
	wg.Wait()
}
