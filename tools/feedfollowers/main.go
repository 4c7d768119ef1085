// Command feedfollowers holds N followers of a running plantstore's change
// feed open, each a server-sent event stream of GET /plants/changes with
// the query it is given (a tag filter, types, or nothing): the load that
// followers put on a server while something else measures its writers.
// It waits for the server to answer, reconnects a stream that ends (from
// its last event's id), and on SIGINT or SIGTERM, or after -duration,
// prints what the streams received: the changes given, the bookmarks, and
// the reconnects.
//
//	go run ./tools/feedfollowers -url http://127.0.0.1:18082 -token bench-token -n 100 -query tag=rose
//
// A server's --max-followers-per-token (16 by default) caps one token's
// streams; give the server a cap above -n.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:18082", "the server's base URL")
	token := flag.String("token", "bench-token", "a bearer token with plants:read")
	n := flag.Int("n", 100, "followers (streams) to hold open")
	query := flag.String("query", "", `the feed's query besides after=now, such as "tag=rose" or "types=plant.deleted"`)
	duration := flag.Duration("duration", 0, "how long to follow (0: until SIGINT or SIGTERM)")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "feedfollowers: -n must be at least 1")
		os.Exit(2)
	}
	if _, err := url.ParseQuery(*query); err != nil {
		fmt.Fprintf(os.Stderr, "feedfollowers: -query %q: %v\n", *query, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	target := strings.TrimRight(*base, "/") + "/plants/changes?after=now"
	if *query != "" {
		target += "&" + *query
	}
	var c counts
	var wg sync.WaitGroup
	for range *n {
		wg.Go(func() { follow(ctx, target, *token, &c) })
	}
	wg.Wait()
	fmt.Printf("feedfollowers: %d followers of %s: %d streams opened (%d reconnects), %d changes, %d bookmarks, %d refusals\n",
		*n, target, c.opened.Load(), c.opened.Load()-int64(*n), c.changes.Load(), c.bookmarks.Load(), c.refused.Load())
}

// counts is what every stream received, summed.
type counts struct {
	opened, changes, bookmarks, refused atomic.Int64
}

// follow holds one stream open until ctx ends, reconnecting after its last
// event's id when it ends, and after a short pause while the server is not
// up yet or refuses.
func follow(ctx context.Context, target, token string, c *counts) {
	last := ""
	for ctx.Err() == nil {
		err := stream(ctx, target, token, &last, c)
		if err == nil || ctx.Err() != nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stream reads one stream to its end, counting its events and keeping the
// last one's id.
func stream(ctx context.Context, target, token string, last *string, c *counts) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.refused.Add(1)
		return errors.New(resp.Status)
	}
	c.opened.Add(1)
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			*last = strings.TrimPrefix(line, "id: ")
		case line == "event: bookmark":
			c.bookmarks.Add(1)
		case strings.HasPrefix(line, "event: "):
			c.changes.Add(1)
		}
	}
	return lines.Err()
}
