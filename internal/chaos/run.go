package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// Config is one run.
type Config struct {
	// Store is "postgres" (one PostgreSQL), "postgres-ha" (a primary and a
	// synchronous standby under Patroni, see HADatabase) or "bolt" (one
	// replica).
	Store    string
	Replicas int
	Clients  int
	IDs      int           // ids in use at a time
	IDLife   time.Duration // how long each id is in use; 0: the same ids throughout
	Seed     uint64
	// Duration, when set, makes a long run: the short schedule, then
	// random faults until it has passed. Unset, the short schedule alone.
	Duration time.Duration
	Calm     time.Duration // between faults
	Dir      string        // artifacts: logs, HAProxy's files, the visualisation
	// Webhooks, when set, gives every replica the receiver as its one
	// webhook endpoint and checks at the end that every acknowledged
	// create was delivered.
	Webhooks *Webhooks
	Logf     func(format string, args ...any)
}

// Result is what a run found.
type Result struct {
	Summary    string
	Verdict    Verdict
	Webhooks   WebhookReport
	Events     EventReport // the envelope endpoint's, when Webhooks.Envelopes is set
	Feed       FeedReport
	TagFeed    FeedReport     // the tag filter's follower's (feedTag)
	Cross      CrossReport    // the feed's changes against the envelopes
	Attempts   AttemptsReport // the record of attempts against the receivers
	Survivor   SurvivorReport
	Violations []string
}

// Failed reports whether the run broke a promise.
// An undecided id fails the run too: the run proves nothing about it (see
// docs/reliability.md).
func (r Result) Failed() bool { return r.Verdict.Result != "Ok" || len(r.Violations) > 0 }

// Run builds the cluster for cfg.Store in cfg.Dir, runs the workload and
// the nemesis, checks the history and tears everything down.
// newPostgres gives the database cluster (a pgtest TCP cluster); it is not
// called for bolt.
func Run(ctx context.Context, cfg Config, newPostgres func() *pgtest.Cluster) (Result, error) {
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	logf("building plantstore")
	bin, err := BuildBinary(cfg.Dir)
	if err != nil {
		return Result{}, err
	}
	c := &Cluster{History: NewHistory(), Logf: logf}
	var replicaEnv func(i int) []string
	switch cfg.Store {
	case "postgres":
		c.Postgres = newPostgres()
		db, err := c.Postgres.CreateDatabase()
		if err != nil {
			return Result{}, err
		}
		for i := range cfg.Replicas {
			p, err := NewFaultProxy("db-r"+strconv.Itoa(i), c.Postgres.TCPAddr())
			if err != nil {
				return Result{}, err
			}
			defer p.Close()
			c.Proxies = append(c.Proxies, p)
		}
		replicaEnv = func(i int) []string {
			return []string{"PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL=" + c.Postgres.TCPURL(db, c.Proxies[i].Addr())}
		}
	case "bolt":
		cfg.Replicas = 1 // one process owns a bolt file
		replicaEnv = func(int) []string {
			return []string{"PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR=" + filepath.Join(cfg.Dir, "data")}
		}
	case "postgres-ha":
		logf("starting etcd and two Patroni nodes")
		c.HA, err = StartHADatabase(ctx, cfg.Dir)
		if err != nil {
			return Result{}, err
		}
		defer c.HA.Stop()
		leader, err := c.HA.Leader()
		if err != nil {
			return Result{}, err
		}
		if _, err := leader.Exec(ctx, "postgres", "CREATE DATABASE plants"); err != nil {
			return Result{}, err
		}
		var nodes []string
		for _, n := range c.HA.Nodes {
			nodes = append(nodes, "127.0.0.1:"+strconv.Itoa(n.PGPort))
		}
		for i := range cfg.Replicas {
			p, err := NewFaultProxy("db-r"+strconv.Itoa(i), nodes...)
			if err != nil {
				return Result{}, err
			}
			defer p.Close()
			c.Proxies = append(c.Proxies, p)
		}
		replicaEnv = func(i int) []string {
			return []string{"PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL=" + MultiHostURL("plants", c.Proxies[i].Addrs())}
		}
	default:
		return Result{}, fmt.Errorf("chaos: store %q, want postgres, postgres-ha or bolt", cfg.Store)
	}
	var hookEnv []string
	if cfg.Webhooks != nil {
		if hookEnv, err = cfg.Webhooks.setup(cfg.Dir); err != nil {
			return Result{}, err
		}
	}
	for i := range cfg.Replicas {
		r, err := NewReplica("r"+strconv.Itoa(i), bin, cfg.Dir, append(replicaEnv(i), hookEnv...))
		if err != nil {
			return Result{}, err
		}
		c.Replicas = append(c.Replicas, r)
	}
	defer func() {
		for _, r := range c.Replicas {
			r.Stop()
		}
	}()
	logf("starting %d %s replicas and HAProxy", cfg.Replicas, cfg.Store)
	// Started one after the other: the first applies the migrations.
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, r := range c.Replicas {
		if err := r.Start(startCtx); err != nil {
			return Result{}, err
		}
	}
	c.LB, err = StartHAProxy(cfg.Dir, c.Replicas)
	if err != nil {
		return Result{}, err
	}
	defer c.LB.Stop()
	if err := c.whole(startCtx); err != nil {
		return Result{}, err
	}

	win := IDWindow{Size: cfg.IDs}
	if cfg.IDLife > 0 {
		win.Step = cfg.IDLife / time.Duration(cfg.IDs)
	}
	w := Workload{URL: c.LB.URL(), Clients: cfg.Clients, IDs: win, Seed: cfg.Seed, MaxOps: 1_000_000, Timeout: 30 * time.Second}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() { w.Run(loadCtx, c.History); close(loadDone) }()
	feed := newFeedFollower(c.Replicas, c.History, cfg.Seed, "")
	tagFeed := newFeedFollower(c.Replicas, c.History, cfg.Seed, feedTag)
	stopFeed, feedDone, tagFeedDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { feed.follow(ctx, stopFeed); close(feedDone) }()
	go func() { tagFeed.follow(ctx, stopFeed); close(tagFeedDone) }()

	logf("load: %d clients on %d ids at a time, each in use for %s; faults begin", cfg.Clients, cfg.IDs, win.Life())
	deadline := time.Now().Add(cfg.Duration)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6e656d65736973)) // the nemesis' own stream
	faults, phases, nemesisErr := RunNemesis(ctx, c, ShortSchedule(cfg.Store), deadline, cfg.Store, rng, cfg.Calm)
	stopLoad()
	<-loadDone
	loadEnd := time.Now()
	close(stopFeed)
	<-feedDone
	<-tagFeedDone
	if nemesisErr != nil {
		c.Violate("the cluster did not recover: %v", nemesisErr)
	}
	// The deliveries are waited for while the final reads and the checker
	// run: most of the wait costs no time of its own. Not on a cluster that
	// did not recover, which has failed already.
	var hooks *webhookWait
	if cfg.Webhooks != nil && nemesisErr == nil {
		logf("waiting for every acknowledged create's webhook")
		hooks = waitForWebhooks(ctx, cfg.Webhooks, c.History.Ops(), loadEnd)
	}

	logf("faults done; reading every id back")
	readCtx, cancelRead := context.WithTimeout(ctx, 5*time.Minute)
	w.FinalReads(readCtx, c.History)
	cancelRead()
	ops := c.History.Ops()
	reads := finalReads(ops)
	var events EventReport
	feedReport, tagFeedReport := FeedReport{}, FeedReport{Tag: feedTag}
	var cross CrossReport
	if nemesisErr == nil {
		if cfg.Webhooks != nil && cfg.Webhooks.Envelopes != nil {
			logf("waiting for every change's envelope")
			events = waitForEvents(ctx, cfg.Webhooks.Envelopes, ops, reads, c.History.Wall, loadEnd, webhookDrainLimit)
			events.violate(c)
		}
		logf("following the change feed to its end")
		feedReport = followToEnd(ctx, feed, reads, c.History.Wall)
		feedReport.violate(c)
		logf("following the change feed of tag %s to its end", feedTag)
		tagFeedReport = followToEnd(ctx, tagFeed, reads, c.History.Wall)
		tagFeedReport.violate(c)
		if cfg.Webhooks != nil && cfg.Webhooks.Envelopes != nil && feedReport.CaughtUp {
			logf("holding the feed against the envelopes")
			cross = crossCheck(ctx, cfg.Webhooks.Envelopes.Requests, feed.Pages(), webhookDrainLimit)
			cross.violate(c)
		}
	}
	judge(c, ops, faults)
	survivor := checkSurvivor(ops)
	survivor.violate(c)
	logf("checking %d operations", len(ops))
	v, err := Check(ops, win, faults, DefaultCheckLimits, cfg.Dir)
	if err != nil {
		return Result{}, err
	}
	var hookReport WebhookReport
	var attempts AttemptsReport
	if hooks != nil {
		hookReport = hooks.result()
		hookReport.CheckLost(ops)
		hookReport.violate(c)
		logf("holding the record of attempts against the receivers")
		receivers := map[string]*webhookstest.Receiver{"chaos": cfg.Webhooks.Receiver}
		if cfg.Webhooks.Envelopes != nil {
			receivers["chaos-envelope"] = cfg.Webhooks.Envelopes
		}
		attempts = checkAttempts(ctx, c.LB.URL(), receivers, webhookDrainLimit)
		attempts.violate(c)
	}
	res := Result{Verdict: v, Webhooks: hookReport, Events: events, Feed: feedReport, TagFeed: tagFeedReport, Cross: cross, Attempts: attempts, Survivor: survivor, Violations: c.Violations()}
	res.Summary = Summary(cfg.Seed, cfg.Store, ops, faults, phases, v, survivor, hookReport, events, []FeedReport{feedReport, tagFeedReport}, cross, res.Violations)
	if attempts.Checked {
		res.Summary += attempts.String() + "\n"
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "summary.txt"), []byte(res.Summary), 0o644); err != nil {
		return res, err
	}
	return res, writeHistory(filepath.Join(cfg.Dir, "history.jsonl"), ops)
}

// writeHistory keeps the history, one operation a line, for a look after
// the run (which replica answered what, when).
func writeHistory(path string, ops []Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
