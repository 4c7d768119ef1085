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
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

const token = "eventlatency-token"

func main() {
	store := flag.String("store", "bolt", "bolt or postgres (postgres needs PLANTSTORE_POSTGRES_URL)")
	replicas := flag.Int("replicas", 0, "plantstore processes (default: 1 on bolt, 3 on postgres)")
	rate := flag.Int("rate", 500, "creates per second")
	duration := flag.Duration("duration", 20*time.Second, "how long creates are sent")
	every := flag.Duration("report", 10*time.Second, "interval of the progress lines")
	format := flag.String("format", "origin", "the endpoint's format: origin or envelope")
	flag.Parse()
	if *replicas == 0 {
		*replicas = map[string]int{"postgres": 3}[*store]
		*replicas = max(*replicas, 1)
	}
	if *store != "bolt" && *store != "postgres" || *rate < 1 || *duration <= 0 || *every <= 0 ||
		*format != "origin" && *format != "envelope" {
		fmt.Fprintln(os.Stderr, "eventlatency: -store must be bolt or postgres, -rate, -duration and -report positive, -format origin or envelope")
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
	if err := run(*store, dsn, *replicas, *rate, *duration, *every, *format); err != nil {
		fmt.Fprintln(os.Stderr, "eventlatency:", err)
		os.Exit(1)
	}
}

// run is one measurement, from the build to the summary.
func run(store, dsn string, replicas, rate int, duration, every time.Duration, format string) error {
	work, err := os.MkdirTemp("", "eventlatency-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "plantstore")
	fmt.Fprintln(os.Stderr, "eventlatency: building plantstore")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/plantstore")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build plantstore: %w", err)
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

	hooks := filepath.Join(work, "webhooks.yaml")
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	file := fmt.Sprintf("endpoints:\n  - name: latency\n    url: http://%s/\n    secrets: [whsec_%s]\n",
		ln.Addr(), base64.StdEncoding.EncodeToString(secret))
	if format == "envelope" {
		file += "    format: envelope\n"
	}
	if err := os.WriteFile(hooks, []byte(file), 0o600); err != nil {
		return err
	}
	var urls []string
	for i := range replicas {
		srv, err := start(bin, store, dsn, filepath.Join(work, fmt.Sprint("data", i)), hooks)
		if err != nil {
			return err
		}
		defer srv.stop()
		urls = append(urls, srv.url)
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
	fmt.Println("interval  creates  events      p50       p99       max  outbox_dead  changes_dead")
	stopLoad := make(chan struct{})
	loadDone := make(chan int)
	go func() { loadDone <- load(urls, rec, firstID, rate, stopLoad) }()
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var from int
	for elapsed := time.Duration(0); elapsed < duration; {
		<-tick.C
		elapsed = time.Since(start)
		lats, to := rec.window(from)
		from = to
		fmt.Printf("%8s %8d %7d %s %s\n", elapsed.Truncate(time.Second), rec.acked.Load(), len(lats), summary(lats), deadTuples(db))
	}
	close(stopLoad)
	sent := <-loadDone
	deadline := time.Now().Add(15 * time.Second)
	for rec.arrivedCount() < int(rec.acked.Load()) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	all := rec.all()
	fmt.Printf("\nsent %d creates, %d acknowledged, %d events arrived (%d before their create's 200), %d missing after 15 s\n",
		sent, rec.acked.Load(), len(all), rec.early.Load(), int(rec.acked.Load())-len(all))
	fmt.Printf("latency from the 200 to the arrival: %s\n", summaryNamed(all))
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
// and when its event arrived.
type recorder struct {
	first   int64
	mu      sync.Mutex
	acks    []time.Time
	arrived []time.Time
	order   []int // indexes in arrival order
	acked   atomic.Int64
	early   atomic.Int64
}

func newRecorder(first int64, n int) *recorder {
	return &recorder{first: first, acks: make([]time.Time, n), arrived: make([]time.Time, n)}
}

// ack records the 200 of plant id.
func (r *recorder) ack(id int64, at time.Time) {
	r.mu.Lock()
	r.acks[id-r.first] = at
	r.mu.Unlock()
	r.acked.Add(1)
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
		id := max(ev.ID, ev.Data.ID) - r.first
		r.mu.Lock()
		if id >= 0 && int(id) < len(r.arrived) && r.arrived[id].IsZero() {
			r.arrived[id] = at
			r.order = append(r.order, int(id))
		}
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *recorder) arrivedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.order)
}

// window is the latencies of the events that arrived after the first from,
// and where the next window starts. An event whose 200 is not yet recorded
// is left for the next window.
func (r *recorder) window(from int) ([]time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lats []time.Duration
	to := from
	for ; to < len(r.order); to++ {
		i := r.order[to]
		if r.acks[i].IsZero() {
			break
		}
		lats = append(lats, r.latency(i))
	}
	return lats, to
}

func (r *recorder) all() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lats []time.Duration
	for _, i := range r.order {
		if !r.acks[i].IsZero() {
			lats = append(lats, r.latency(i))
		}
	}
	return lats
}

// latency is from plant i's 200 to its event's arrival; 0, counted, when
// the event came first. Called with mu held.
func (r *recorder) latency(i int) time.Duration {
	d := r.arrived[i].Sub(r.acks[i])
	if d < 0 {
		r.early.Add(1)
		return 0
	}
	return d
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

type server struct {
	cmd *exec.Cmd
	url string
}

// start starts one plantstore process and waits until it is ready.
func start(bin, store, dsn, dataDir, hooks string) (*server, error) {
	apiAddr, adminAddr := freeAddr(), freeAddr()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"PLANTSTORE_STORE="+store,
		"PLANTSTORE_DATA_DIR="+dataDir,
		"PLANTSTORE_TOKENS="+token,
		"PLANTSTORE_HTTP_ADDR="+apiAddr,
		"PLANTSTORE_ADMIN_ADDR="+adminAddr,
		"PLANTSTORE_DRAIN_DELAY=0s",
		"PLANTSTORE_WEBHOOKS_FILE="+hooks,
		"PLANTSTORE_WEBHOOKS_ALLOW_PRIVATE=true",
		"PLANTSTORE_WEBHOOKS_ALLOW_HTTP=true",
	)
	if store == "postgres" {
		cmd.Env = append(cmd.Env, "PLANTSTORE_POSTGRES_URL="+dsn)
	}
	cmd.Stdout = io.Discard
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, url: "http://" + apiAddr + "/plants"}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("plantstore did not become ready within 30 s")
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
