// Command eventlatency measures how soon a webhook follows its change: it
// builds plantstore, starts it (one process on bolt, or several replicas
// sharing a PostgreSQL database), points one webhook endpoint at a receiver
// of its own, creates plants at a fixed rate (an open loop: a slow answer
// does not slow the next create), and prints, per report interval and for
// the whole run, the latency from each create's 200 to its event's arrival
// (p50, p99, max). On postgres each interval also shows the outbox's and
// the change log's dead tuples, the known way queue tables decay under a
// sustained load.
//
//	go run ./tools/eventlatency -store bolt -rate 500 -duration 30s
//	PLANTSTORE_POSTGRES_URL=postgres://... go run ./tools/eventlatency -store postgres -replicas 3
//
// A change-feed follower runs beside the receiver: a long poll on
// GET /plants/changes (wait=30s) against the first process, whose arrivals
// are measured the same way. With -catchup N, the run then imports N
// plants and times a follower reading their N changes from the cursor
// before the import, in pages of 1,000: the feed's catch-up rate.
//
// An event can arrive before its create's 200 has reached the client: the
// commit hands the event to the sender before the answer is written. Such
// an event counts as latency 0 and is counted apart.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/tools/internal/child"
)

const token = "eventlatency-token"

func main() {
	store := flag.String("store", "bolt", "bolt or postgres (postgres needs PLANTSTORE_POSTGRES_URL)")
	replicas := flag.Int("replicas", 0, "plantstore processes (default: 1 on bolt, 3 on postgres)")
	rate := flag.Int("rate", 500, "creates per second")
	duration := flag.Duration("duration", 20*time.Second, "how long creates are sent")
	every := flag.Duration("report", 10*time.Second, "interval of the progress lines")
	format := flag.String("format", "origin", "the endpoint's format: origin or envelope")
	catchup := flag.Int("catchup", 0, "after the run, import this many plants and time a follower reading their changes")
	flag.Parse()
	if *replicas == 0 {
		*replicas = map[string]int{"postgres": 3}[*store]
		*replicas = max(*replicas, 1)
	}
	if *store != "bolt" && *store != "postgres" || *rate < 1 || *duration <= 0 || *every <= 0 || *catchup < 0 ||
		*format != "origin" && *format != "envelope" {
		fmt.Fprintln(os.Stderr, "eventlatency: -store must be bolt or postgres, -rate, -duration and -report positive, -catchup at least 0, -format origin or envelope")
		os.Exit(2)
	}
	if *store == "bolt" && *replicas != 1 {
		fmt.Fprintln(os.Stderr, "eventlatency: bolt runs one process (-replicas 1)")
		os.Exit(2)
	}
	dsn := os.Getenv("PLANTSTORE_POSTGRES_URL")
	if *store == "postgres" && dsn == "" {
		fmt.Fprintln(os.Stderr, "eventlatency: -store postgres needs PLANTSTORE_POSTGRES_URL")
		os.Exit(2)
	}
	if err := run(*store, dsn, *replicas, *rate, *duration, *every, *format, *catchup); err != nil {
		fmt.Fprintln(os.Stderr, "eventlatency:", err)
		os.Exit(1)
	}
}

// run is one measurement, from the build to the summary.
func run(store, dsn string, replicas, rate int, duration, every time.Duration, format string, catchup int) error {
	work, err := os.MkdirTemp("", "eventlatency-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin, err := child.Build(work, "eventlatency")
	if err != nil {
		return err
	}

	total := rate * int(duration/time.Second+1)
	firstID := newFirstID()
	rec := newRecorder(firstID, total)
	recv := &http.Server{Handler: rec, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = recv.Serve(ln) }()
	defer recv.Close()

	hooksFile := filepath.Join(work, "webhooks.yaml")
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	file := fmt.Sprintf("endpoints:\n  - name: latency\n    url: http://%s/\n    secrets: [whsec_%s]\n",
		ln.Addr(), base64.StdEncoding.EncodeToString(secret))
	if format == "envelope" {
		file += "    format: envelope\n"
	}
	if err := os.WriteFile(hooksFile, []byte(file), 0o600); err != nil {
		return err
	}
	var urls []string
	for i := range replicas {
		srv, err := start(bin, store, dsn, filepath.Join(work, fmt.Sprint("data", i)), hooksFile)
		if err != nil {
			return err
		}
		defer srv.Stop()
		urls = append(urls, srv.API+"/plants")
	}
	fmt.Fprintf(os.Stderr, "eventlatency: %d creates/s for %v on %s (%d process(es)), events to a receiver on %s\n",
		rate, duration, store, replicas, ln.Addr())

	var db *pgx.Conn
	if store == "postgres" {
		if db, err = pgx.Connect(context.Background(), dsn); err != nil {
			return err
		}
		defer db.Close(context.Background())
	}
	from, err := head(http.DefaultClient, urls[0])
	if err != nil {
		return err
	}
	followCtx, stopFollow := context.WithCancel(context.Background())
	defer stopFollow()
	go rec.follow(followCtx, urls[0], from)
	fmt.Println("interval  creates  webhooks  p50       p99       max       feed  p50       p99       max       outbox_dead  changes_dead")
	stopLoad := make(chan struct{})
	loadDone := make(chan int)
	go func() { loadDone <- load(urls, rec, firstID, rate, stopLoad) }()
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var hooksFrom, feedFrom int
	for elapsed := time.Duration(0); elapsed < duration; {
		<-tick.C
		elapsed = time.Since(start)
		hooks, to := rec.window(rec.hooks, hooksFrom)
		hooksFrom = to
		feed, to := rec.window(rec.feed, feedFrom)
		feedFrom = to
		fmt.Printf("%8s %8d %9d %s %10d %s %s\n", elapsed.Truncate(time.Second), rec.acked.Load(),
			len(hooks), summary(hooks), len(feed), summary(feed), deadTuples(db))
	}
	close(stopLoad)
	sent := <-loadDone
	// What has not arrived by then is reported as missing below.
	_ = poll.Until(context.Background(), 50*time.Millisecond, 15*time.Second, func() (bool, error) {
		acked := int(rec.acked.Load())
		return rec.count(rec.hooks) >= acked && rec.count(rec.feed) >= acked, nil
	})
	stopFollow()
	hooks, feed := rec.all(rec.hooks), rec.all(rec.feed)
	fmt.Printf("\nsent %d creates, %d acknowledged\n", sent, rec.acked.Load())
	fmt.Printf("webhooks: %d arrived (%d before their create's 200), %d missing after 15 s; from the 200: %s\n",
		len(hooks), rec.hooks.early, int(rec.acked.Load())-len(hooks), summaryNamed(hooks))
	fmt.Printf("feed:     %d arrived (%d before their create's 200), %d missing after 15 s; from the 200: %s\n",
		len(feed), rec.feed.early, int(rec.acked.Load())-len(feed), summaryNamed(feed))
	if catchup > 0 {
		fmt.Fprintf(os.Stderr, "eventlatency: importing %d plants, then reading their changes\n", catchup)
		rate, err := catchUp(urls[0], firstID+int64(total), catchup)
		if err != nil {
			return fmt.Errorf("catch-up: %w", err)
		}
		fmt.Printf("catch-up: %d changes read from the feed at %.0f changes/s (pages of 1,000)\n", catchup, rate)
	}
	return nil
}

// newFirstID starts the run's ids at a random point, so that runs against
// one database do not collide.
func newFirstID() int64 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return int64(b[0]&0x7f)<<32 | int64(b[1])<<24 | int64(b[2])<<16 | int64(b[3])<<8 + 1
}

// recorder keeps, per plant of the run, when its create was acknowledged
// and when its event reached the receiver (hooks) and the follower (feed).
type recorder struct {
	first int64
	mu    sync.Mutex
	acks  []time.Time
	acked atomic.Int64
	hooks *arrivals
	feed  *arrivals
}

// arrivals is when each plant's first event came to one consumer.
type arrivals struct {
	at    []time.Time
	order []int // indexes in arrival order
	early int   // arrived before their create's 200
}

func newRecorder(first int64, n int) *recorder {
	return &recorder{first: first, acks: make([]time.Time, n),
		hooks: &arrivals{at: make([]time.Time, n)}, feed: &arrivals{at: make([]time.Time, n)}}
}

// ack records the 200 of plant id.
func (r *recorder) ack(id int64, at time.Time) {
	r.mu.Lock()
	r.acks[id-r.first] = at
	r.mu.Unlock()
	r.acked.Add(1)
}

// arrived records that plant id's first event reached a.
func (r *recorder) arrived(a *arrivals, id int64, at time.Time) {
	i := id - r.first
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= 0 && int(i) < len(a.at) && a.at[i].IsZero() {
		a.at[i] = at
		a.order = append(a.order, int(i))
	}
}

// ServeHTTP is the receiver: it notes when each plant's first event came.
func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var ev struct {
		ID   int64 `json:"id"`
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &ev) == nil {
		r.arrived(r.hooks, max(ev.ID, ev.Data.ID), at)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *recorder) count(a *arrivals) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(a.order)
}

// window is the latencies of a's events that arrived after the first from,
// and where the next window starts. An event whose 200 is not yet recorded
// is left for the next window.
func (r *recorder) window(a *arrivals, from int) ([]time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lats []time.Duration
	to := from
	for ; to < len(a.order); to++ {
		i := a.order[to]
		if r.acks[i].IsZero() {
			break
		}
		lats = append(lats, r.latency(a, i))
	}
	return lats, to
}

func (r *recorder) all(a *arrivals) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	a.early = 0
	var lats []time.Duration
	for _, i := range a.order {
		if !r.acks[i].IsZero() {
			lats = append(lats, r.latency(a, i))
		}
	}
	return lats
}

// latency is from plant i's 200 to its event's arrival at a; 0, counted,
// when the event came first. Called with mu held.
func (r *recorder) latency(a *arrivals, i int) time.Duration {
	d := a.at[i].Sub(r.acks[i])
	if d < 0 {
		a.early++
		return 0
	}
	return d
}

// feedPage is a page of GET /plants/changes, as much as the follower reads.
type feedPage struct {
	Changes []struct {
		Type string `json:"type"`
		ID   int64  `json:"id"`
	} `json:"changes"`
	Next string `json:"next"`
}

// readPage asks base (a process's /plants URL) for the changes after
// cursor.
func readPage(ctx context.Context, client *http.Client, base, after string, limit int, wait time.Duration) (feedPage, error) {
	var page feedPage
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("%s/changes?after=%s&limit=%d&wait=%s", base, after, limit, wait), nil)
	if err != nil {
		return page, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return page, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return page, fmt.Errorf("GET /plants/changes: %d %s", resp.StatusCode, b)
	}
	return page, json.NewDecoder(resp.Body).Decode(&page)
}

// head is the change log's cursor now, from a listing's header.
func head(client *http.Client, base string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	c := resp.Header.Get("Plantstore-Changes-Cursor")
	if resp.StatusCode != http.StatusOK || c == "" {
		return "", fmt.Errorf("GET /plants: %d, cursor %q", resp.StatusCode, c)
	}
	return c, nil
}

// follow long-polls the feed of base from after until ctx ends, noting
// each created plant's arrival.
func (r *recorder) follow(ctx context.Context, base, after string) {
	client := &http.Client{}
	for ctx.Err() == nil {
		page, err := readPage(ctx, client, base, after, 1000, 30*time.Second)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		at := time.Now()
		for _, c := range page.Changes {
			if c.Type == "plant.created" {
				r.arrived(r.feed, c.ID, at)
			}
		}
		after = page.Next
	}
}

// catchUp imports n plants from first, then reads their changes from the
// cursor taken before the import, and returns the rate it read them at.
func catchUp(base string, first int64, n int) (float64, error) {
	client := &http.Client{}
	from, err := head(client, base)
	if err != nil {
		return 0, err
	}
	var body bytes.Buffer
	for i := range int64(n) {
		fmt.Fprintf(&body, "{\"id\":%d,\"name\":\"catch-up %d\"}\n", first+i, i)
	}
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/plants")+"/plants:import", &body)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("import: %d", resp.StatusCode)
	}
	start, read := time.Now(), 0
	for read < n {
		page, err := readPage(context.Background(), client, base, from, 1000, 0)
		if err != nil {
			return 0, err
		}
		if len(page.Changes) == 0 {
			return 0, fmt.Errorf("the feed ended after %d of %d changes", read, n)
		}
		read += len(page.Changes)
		from = page.Next
	}
	return float64(read) / time.Since(start).Seconds(), nil
}

// load sends rate creates a second, spread over the processes, until stop,
// and returns how many it sent. Creates run on a pool of keep-alive
// connections sized for the rate, so that a slow answer does not delay the
// next create.
func load(urls []string, rec *recorder, first int64, rate int, stop <-chan struct{}) int {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	ids := make(chan int64, rate)
	var wg sync.WaitGroup
	for range 128 {
		wg.Go(func() {
			for id := range ids {
				url := urls[int(id)%len(urls)]
				body := fmt.Appendf(nil, `{"id":%d,"name":"plant %d"}`, id, id)
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated {
					rec.ack(id, time.Now())
				}
			}
		})
	}
	const step = 2 * time.Millisecond
	tick := time.NewTicker(step)
	defer tick.Stop()
	start, sent := time.Now(), 0
	limit := len(rec.acks)
	for sent < limit {
		select {
		case <-stop:
			close(ids)
			wg.Wait()
			return sent
		case <-tick.C:
		}
		due := min(int(time.Since(start).Seconds()*float64(rate)), limit)
		for ; sent < due; sent++ {
			ids <- first + int64(sent)
		}
	}
	<-stop
	close(ids)
	wg.Wait()
	return sent
}

func summary(lats []time.Duration) string {
	if len(lats) == 0 {
		return fmt.Sprintf("%9s %9s %9s", "-", "-", "-")
	}
	slices.Sort(lats)
	return fmt.Sprintf("%9v %9v %9v", pct(lats, 50), pct(lats, 99), lats[len(lats)-1].Round(time.Microsecond))
}

func summaryNamed(lats []time.Duration) string {
	if len(lats) == 0 {
		return "no event arrived"
	}
	slices.Sort(lats)
	return fmt.Sprintf("p50 %v, p99 %v, max %v over %d events", pct(lats, 50), pct(lats, 99), lats[len(lats)-1].Round(time.Microsecond), len(lats))
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100].Round(time.Microsecond)
}

// deadTuples reads the postgres outbox's and change log's dead tuples, or
// blanks on bolt.
func deadTuples(db *pgx.Conn) string {
	if db == nil {
		return fmt.Sprintf("%12s %13s", "-", "-")
	}
	var outbox, changes int64
	err := db.QueryRow(context.Background(), `SELECT
  coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'), 0),
  coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'plant_changes'), 0)`).Scan(&outbox, &changes)
	if err != nil {
		return "  " + err.Error()
	}
	return fmt.Sprintf("%12d %13d", outbox, changes)
}

// start starts one plantstore process and waits until it is ready; its
// webhooks go to the endpoints of the file hooks, on loopback and http.
func start(bin, store, dsn, dataDir, hooks string) (*child.Server, error) {
	env := []string{
		"PLANTSTORE_STORE=" + store,
		"PLANTSTORE_DATA_DIR=" + dataDir,
		"PLANTSTORE_WEBHOOKS_FILE=" + hooks,
		"PLANTSTORE_WEBHOOKS_ALLOW_PRIVATE=true",
		"PLANTSTORE_WEBHOOKS_ALLOW_HTTP=true",
	}
	if store == "postgres" {
		env = append(env, "PLANTSTORE_POSTGRES_URL="+dsn)
	}
	return child.Start(bin, token, 30*time.Second, env...)
}
