package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The change feed is followed through the whole run: one follower long-
// polls GET /plants/changes, each call on a replica drawn at random (each
// replica directly, not through HAProxy, so that every replica's view of
// the log is held against the others'), resuming from the last page's
// next. A second follower does the same with a tag filter (feedTag): its
// mirror is of the plants with the tag, and its nexts move past the
// changes it was not given (bookmarks). Every page is recorded and checked
// at the end (feedcheck.go).

const (
	feedWait  = "1s" // each call's long poll
	feedLimit = 200  // each page's changes, at most
	// feedCatchUpLimit bounds the end's follow: past it the feed is checked
	// as it is.
	feedCatchUpLimit = 60 * time.Second
	// feedTag is the filtered follower's tag: one of the two the workload
	// moves its plants between (plantFor), so that plants enter and leave
	// it all through the run.
	feedTag = "green"
)

// FeedPage is one page the follower got.
type FeedPage struct {
	Replica      string
	After        string // the cursor asked after, "" for the log's beginning
	Next         string
	Changes      []FeedChange
	Call, Return time.Duration
}

// FeedChange is one change of a page, as the feed writes it.
type FeedChange struct {
	Cursor    string     `json:"cursor"`
	Type      string     `json:"type"`
	ID        int64      `json:"id"`
	Version   int64      `json:"version"`
	Timestamp string     `json:"timestamp"`
	Plant     *plantJSON `json:"plant"`
}

// feedFollower follows the change feed across the replicas.
type feedFollower struct {
	names, urls []string
	client      *http.Client
	history     *History
	rng         *rand.Rand
	tag         string // the tag filter, "" for every change

	mu      sync.Mutex
	pages   []FeedPage
	next    string
	retried int    // calls that failed and were made again
	failure string // an answer that ends the following (a 410), "" if none
}

// newFeedFollower follows the feed of replicas with a tag filter, or of
// every change when tag is "".
func newFeedFollower(replicas []*Replica, h *History, seed uint64, tag string) *feedFollower {
	stream := uint64(0x66656564) // the follower's own stream
	if tag != "" {
		stream = 0x74616766656564
	}
	f := &feedFollower{client: &http.Client{Timeout: 15 * time.Second}, history: h, tag: tag,
		rng: rand.New(rand.NewPCG(seed, stream))}
	for _, r := range replicas {
		f.names = append(f.names, r.Name)
		f.urls = append(f.urls, "http://127.0.0.1:"+strconv.Itoa(r.APIPort))
	}
	return f
}

// follow calls the feed until stop closes (between calls) or an answer
// ends the following.
func (f *feedFollower) follow(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if _, ok := f.call(ctx); !ok {
			return
		}
	}
}

// catchUp follows until a page with the wait comes back empty and done
// says the feed has what it needs, or until the limit; it reports when.
func (f *feedFollower) catchUp(ctx context.Context, done func([]FeedPage) bool) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < feedCatchUpLimit && ctx.Err() == nil {
		n, ok := f.call(ctx)
		if !ok {
			return time.Since(start), false
		}
		if n == 0 && done(f.Pages()) {
			return time.Since(start), true
		}
	}
	return time.Since(start), false
}

// followToEnd follows f until it is caught up with the final reads and
// checks every page it got.
func followToEnd(ctx context.Context, f *feedFollower, reads map[int64]finalRead, wall func(time.Duration) time.Time) FeedReport {
	took, caughtUp := time.Duration(0), false
	if _, failure := f.state(); failure == "" {
		took, caughtUp = f.catchUp(ctx, func(pages []FeedPage) bool { return checkFeed(pages, reads, wall, f.tag).complete() })
	}
	rep := checkFeed(f.Pages(), reads, wall, f.tag)
	rep.Retried, rep.Failure = f.state()
	rep.CaughtUp, rep.Follow = caughtUp, took
	return rep
}

// call asks one replica for the page after the last next and records it.
// It returns the page's changes (-1 for a failed call, retried by the next
// call after a pause) and false when the following must end.
func (f *feedFollower) call(ctx context.Context) (int, bool) {
	i := f.rng.IntN(len(f.urls))
	f.mu.Lock()
	after := f.next
	f.mu.Unlock()
	q := url.Values{"limit": {strconv.Itoa(feedLimit)}, "wait": {feedWait}}
	if after != "" {
		q.Set("after", after)
	}
	if f.tag != "" {
		q.Set("tag", f.tag)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.urls[i]+"/plants/changes?"+q.Encode(), nil)
	if err != nil {
		panic(err) // a request of our own making
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	page := FeedPage{Replica: f.names[i], After: after, Call: f.history.Now()}
	resp, err := f.client.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	page.Return = f.history.Now()
	switch {
	case err != nil, resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests:
		// A replica killed, stopped, cut from its database or draining.
		f.mu.Lock()
		f.retried++
		f.mu.Unlock()
		sleep(ctx, 200*time.Millisecond)
		return -1, ctx.Err() == nil
	case resp.StatusCode != http.StatusOK:
		f.fail(fmt.Sprintf("GET /plants/changes after %q on %s answered %d: %s", after, page.Replica, resp.StatusCode, body))
		return -1, false
	}
	var p struct {
		Changes []FeedChange `json:"changes"`
		Next    *string      `json:"next"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Next == nil {
		f.fail(fmt.Sprintf("GET /plants/changes after %q on %s answered 200 with %s", after, page.Replica, body))
		return -1, false
	}
	page.Changes, page.Next = p.Changes, *p.Next
	f.mu.Lock()
	f.pages = append(f.pages, page)
	f.next = page.Next
	f.mu.Unlock()
	return len(page.Changes), true
}

func (f *feedFollower) fail(msg string) {
	f.mu.Lock()
	f.failure = msg
	f.mu.Unlock()
}

// Pages is every page so far, in the order they came.
func (f *feedFollower) Pages() []FeedPage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FeedPage(nil), f.pages...)
}

// state is the failed calls and the answer that ended the following.
func (f *feedFollower) state() (retried int, failure string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.retried, f.failure
}
