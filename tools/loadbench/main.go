// Command loadbench is plantstore's own load benchmark (`make bench`). It
// builds plantstore, starts it on each store, drives concurrent keep-alive
// creates for a fixed time at several concurrencies, and prints requests per
// second, p50, p99 and the server's peak RSS as a table. It says first what
// it measures and how long that takes, and then each step as it starts, on
// stderr, so that a run of a minute or more is not silent.
//
// It needs nothing but Go: the postgres store is measured when
// PLANTSTORE_POSTGRES_URL points at a server, and skipped otherwise.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore/tools/internal/child"
)

const token = "loadbench-token"

func main() {
	stores := flag.String("stores", "memory,bolt,postgres", "stores to measure (postgres needs PLANTSTORE_POSTGRES_URL)")
	conns := flag.String("conns", "1,8,32,128", "concurrencies to measure")
	duration := flag.Duration("duration", 5*time.Second, "load time per store and concurrency")
	flag.Parse()
	if err := run(strings.Split(*stores, ","), *conns, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func run(stores []string, connList string, duration time.Duration) error {
	p, err := newPlan(stores, connList, duration, os.Getenv)
	if err != nil {
		return err
	}
	p.announce(os.Stderr)
	measured, concurrencies, steps := p.stores, p.concurrencies, p.steps()
	work, err := os.MkdirTemp("", "loadbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin, err := child.Build(work, "loadbench")
	if err != nil {
		return err
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tconns\treq/s\tp50\tp99\terrors\tpeak RSS\t")
	step := 0
	for _, store := range measured {
		srv, err := startServer(bin, store, filepath.Join(work, store))
		if err != nil {
			return err
		}
		for i, c := range concurrencies {
			step++
			fmt.Fprintf(os.Stderr, "loadbench: [%d/%d] %s store, %d connections, %v\n", step, steps, store, c, duration)
			srv.resetPeakRSS()
			res := load(srv.url, c, duration, int64(i+1)<<40)
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%v\t%v\t%d\t%s\t\n", store, c, res.rps, res.p50, res.p99, res.errors, srv.peakRSS())
		}
		srv.Stop()
	}
	return tw.Flush()
}

// plan is what a run measures: the stores (postgres only with a server to
// measure), each at every concurrency, for duration.
type plan struct {
	stores        []string
	skipped       []string // with the reason
	concurrencies []int
	duration      time.Duration
}

func newPlan(stores []string, connList string, duration time.Duration, getenv func(string) string) (plan, error) {
	p := plan{duration: duration}
	for _, c := range strings.Split(connList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return p, fmt.Errorf("bad concurrency %q", c)
		}
		p.concurrencies = append(p.concurrencies, n)
	}
	for _, store := range stores {
		store = strings.TrimSpace(store)
		if store == "postgres" && getenv("PLANTSTORE_POSTGRES_URL") == "" {
			p.skipped = append(p.skipped, "postgres: PLANTSTORE_POSTGRES_URL is not set")
			continue
		}
		p.stores = append(p.stores, store)
	}
	return p, nil
}

func (p plan) steps() int { return len(p.stores) * len(p.concurrencies) }

// announce says what the run measures and how long its load lasts, before
// the build and the first step: a run of a minute or more is not silent.
func (p plan) announce(w io.Writer) {
	for _, s := range p.skipped {
		fmt.Fprintln(w, "loadbench: skipping", s)
	}
	conns := make([]string, len(p.concurrencies))
	for i, c := range p.concurrencies {
		conns[i] = strconv.Itoa(c)
	}
	fmt.Fprintf(w, "loadbench: creates (POST /plants, a new id each, on keep-alive connections) against a fresh plantstore "+
		"on the %s store at %s connections, %v each: %d steps, about %v of load after the build\n",
		strings.Join(p.stores, ", "), strings.Join(conns, ","), p.duration, p.steps(), time.Duration(p.steps())*p.duration)
}

// server is a plantstore on one store, with its /plants URL.
type server struct {
	*child.Server
	url string
}

func startServer(bin, store, dataDir string) (*server, error) {
	srv, err := child.Start(bin, token, 20*time.Second, "PLANTSTORE_STORE="+store, "PLANTSTORE_DATA_DIR="+dataDir)
	if err != nil {
		return nil, fmt.Errorf("%s store: %w", store, err)
	}
	return &server{Server: srv, url: srv.API + "/plants"}, nil
}

// resetPeakRSS clears the kernel's high-water mark so that each
// concurrency's peak is its own (Linux; harmless elsewhere).
func (s *server) resetPeakRSS() {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.Cmd.Process.Pid), []byte("5"), 0)
}

func (s *server) peakRSS() string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	if err != nil {
		return "n/a"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return fmt.Sprintf("%.1f MB", float64(kb)/1024)
		}
	}
	return "n/a"
}

type result struct {
	rps      float64
	p50, p99 time.Duration
	errors   int64
}

// load runs conns workers, each on its own keep-alive connection, creating
// plants with unique ids from idBase for d.
func load(url string, conns int, d time.Duration, idBase int64) result {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var next atomic.Int64
	var errs atomic.Int64
	latencies := make([][]time.Duration, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conns {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1<<16)
			var body bytes.Buffer
			for ctx.Err() == nil {
				id := idBase + next.Add(1)
				body.Reset()
				fmt.Fprintf(&body, `{"id":%d,"name":"plant-%d","tag":"fern"}`, id, id)
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body.Bytes()))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						errs.Add(1)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if resp.StatusCode != http.StatusOK {
					errs.Add(1)
				}
			}
			latencies[w] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(latencies...)
	slices.Sort(all)
	res := result{rps: float64(len(all)) / elapsed.Seconds(), errors: errs.Load()}
	if n := len(all); n > 0 {
		res.p50 = all[n/2].Round(time.Microsecond)
		res.p99 = all[n*99/100].Round(time.Microsecond)
	}
	client.CloseIdleConnections()
	return res
}
