package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
)

// Cluster is what the nemesis acts on.
type Cluster struct {
	Replicas []*Replica
	Proxies  []*FaultProxy   // Proxies[i] is Replicas[i]'s database link; nil for bolt
	Postgres *pgtest.Cluster // one PostgreSQL; nil otherwise
	HA       *HADatabase     // postgres-ha; nil otherwise
	LB       *HAProxy
	History  *History
	Logf     func(format string, args ...any) // progress, may be nil

	mu         sync.Mutex
	violations []string
}

// Violate records a broken promise; the run fails with it.
func (c *Cluster) Violate(format string, args ...any) {
	c.mu.Lock()
	c.violations = append(c.violations, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// Violations are the broken promises recorded so far.
func (c *Cluster) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// FaultRecord is one fault as it happened, for the summary and the
// visualisation.
type FaultRecord struct {
	Name   string
	Detail string
	Start  time.Duration
	End    time.Duration // healed and every replica back in HAProxy
	Err    error

	// A cut: when /readyz turned 503 and HAProxy took the replica out,
	// measured from the cut; Replica and Down/Healed bound the time no
	// request may reach it.
	Replica       string
	ReadyzAfter   time.Duration
	HAProxyAfter  time.Duration
	Down, Healed  time.Duration
	ZeroFailures  bool // a rolling restart: no request may fail meanwhile
	KillsInFlight bool // a replica dies with requests in flight: HAProxy's 502s are expected
}

// Fault is one kind of fault.
type Fault struct {
	Name string
	run  func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error
}

// The faults. Each waits, before it returns, until the cluster is whole
// again (every replica ready and in HAProxy), so faults do not overlap and
// each phase's figures are its own.
var (
	Kill = Fault{"kill", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		r := c.Replicas[rng.IntN(len(c.Replicas))]
		down := time.Duration(1000+rng.IntN(2001)) * time.Millisecond
		rec.Detail, rec.KillsInFlight = fmt.Sprintf("SIGKILL %s, restart after %s", r.Name, down), true
		if err := r.Kill(); err != nil {
			return err
		}
		sleep(ctx, down)
		if err := r.Start(ctx); err != nil {
			return err
		}
		return c.whole(ctx)
	}}
	Rolling = Fault{"rolling-restart", func(ctx context.Context, c *Cluster, _ *rand.Rand, rec *FaultRecord) error {
		rec.Detail, rec.ZeroFailures = fmt.Sprintf("SIGTERM, drain, start each of %d replicas in turn", len(c.Replicas)), true
		for _, r := range c.Replicas {
			if err := r.Terminate(); err != nil {
				return err
			}
			if err := r.Start(ctx); err != nil {
				return err
			}
			if _, err := c.LB.WaitStatus(ctx, r.Name, "UP"); err != nil {
				return err
			}
		}
		return nil
	}}
	PostgresCrash = Fault{"postgres-crash", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		down := time.Duration(1000+rng.IntN(2001)) * time.Millisecond
		rec.Detail = fmt.Sprintf("pg_ctl stop -m immediate, start after %s", down)
		if err := c.Postgres.StopImmediate(); err != nil {
			return err
		}
		sleep(ctx, down)
		if err := c.Postgres.Start(); err != nil {
			return err
		}
		return c.whole(ctx)
	}}
	Cut = Fault{"cut", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		return cut(ctx, c, rng, rec, false)
	}}
	Partition = Fault{"partition", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		return cut(ctx, c, rng, rec, true)
	}}
	Latency = Fault{"latency", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		i := rng.IntN(len(c.Replicas))
		ms, hold := 100+rng.IntN(201), time.Duration(4000+rng.IntN(4001))*time.Millisecond
		rec.Detail = fmt.Sprintf("%d ms on %s's database link for %s", ms, c.Replicas[i].Name, hold)
		if err := c.Proxies[i].Latency(ms); err != nil {
			return err
		}
		sleep(ctx, hold)
		c.Proxies[i].Clear()
		return c.whole(ctx)
	}}
	Reset = Fault{"reset", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		i := rng.IntN(len(c.Replicas))
		hold := time.Duration(1000+rng.IntN(2001)) * time.Millisecond
		rec.Detail = fmt.Sprintf("TCP resets on %s's database link for %s", c.Replicas[i].Name, hold)
		if err := c.Proxies[i].Reset(); err != nil {
			return err
		}
		sleep(ctx, hold)
		c.Proxies[i].Clear()
		return c.whole(ctx)
	}}
)

// cut separates one replica from the database for 5 to 10 s: a cut closes
// its connections and refuses new ones (the database host is gone), a
// blackhole keeps them open and drops every byte (a network partition,
// where only timeouts tell). Either way its /readyz must turn 503 within
// 2 s (the spec's bound) and HAProxy must take it out.
func cut(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord, blackhole bool) error {
	i := rng.IntN(len(c.Replicas))
	r := c.Replicas[i]
	hold := time.Duration(5000+rng.IntN(5001)) * time.Millisecond
	how := "cut from"
	if blackhole {
		how = "partitioned (blackhole) from"
	}
	rec.Detail, rec.Replica = fmt.Sprintf("%s %s the database for %s", r.Name, how, hold), r.Name
	start := time.Now()
	heal := c.Proxies[i].Heal
	if blackhole {
		if err := c.Proxies[i].Blackhole(); err != nil {
			return err
		}
		heal = func() error { c.Proxies[i].Clear(); return nil }
	} else {
		c.Proxies[i].Cut()
	}
	// Poll readiness as a kubelet would, every 100 ms, each probe bounded
	// by its own timeout.
	client := &http.Client{Timeout: 3 * time.Second}
	// Not turning 503 within the hold is what the check below reports.
	_ = poll.Until(ctx, 100*time.Millisecond, hold-time.Since(start), func() (bool, error) {
		return r.ReadyzStatus(client) == http.StatusServiceUnavailable, nil
	})
	rec.ReadyzAfter = time.Since(start)
	if rec.ReadyzAfter > 2*time.Second {
		c.Violate("%s: %s's /readyz turned 503 after %s, over 2s", rec.Name, r.Name, rec.ReadyzAfter.Round(time.Millisecond))
	}
	wctx, cancel := context.WithTimeout(ctx, hold)
	downAt, err := c.LB.WaitStatus(wctx, r.Name, "DOWN")
	cancel()
	if err != nil {
		c.Violate("%s: %v", rec.Name, err)
	} else {
		rec.HAProxyAfter = downAt.Sub(start)
		rec.Down = c.History.Now() - time.Since(downAt)
	}
	sleep(ctx, hold-time.Since(start))
	rec.Healed = c.History.Now()
	if err := heal(); err != nil {
		return err
	}
	return c.whole(ctx)
}

// whole waits until every replica answers ready and HAProxy has all of
// them UP.
func (c *Cluster) whole(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 3 * time.Second}
	for _, r := range c.Replicas {
		// ctx's two minutes bound the whole wait, this replica's included.
		if err := poll.Until(ctx, 100*time.Millisecond, 2*time.Minute, func() (bool, error) { return r.Ready(client), nil }); err != nil {
			return fmt.Errorf("%s not ready again: %w", r.Name, err)
		}
		if _, err := c.LB.WaitStatus(ctx, r.Name, "UP"); err != nil {
			return err
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Phase is a stretch of a run: a fault from its start until the cluster is
// whole again, or a calm stretch between faults.
type Phase struct {
	Name       string
	Start, End time.Duration
}

// Schedule is the faults of a run in order.
type Schedule []Fault

// ShortSchedule is make test's fixed schedule: every fault once (for the
// highly available database, its own faults; the long run adds the
// replicas' and links' faults).
func ShortSchedule(store string) Schedule {
	switch store {
	case "bolt":
		return Schedule{Kill, Kill, Kill}
	case "postgres-ha":
		// No plain kill-primary: the last two end with one.
		return Schedule{Switchover, StallStandby, PartitionPrimary, PartitionReplication, CancelFailover, StallFailover}
	}
	return Schedule{Kill, Latency, Reset, Cut, Partition, PostgresCrash, Rolling}
}

// RandomFault draws the next fault of a long run.
func RandomFault(store string, rng *rand.Rand) Fault {
	var all Schedule
	switch store {
	case "bolt":
		return Kill
	case "postgres-ha":
		all = append(ShortSchedule(store), KillPrimary, Kill, Latency, Reset, Cut, Partition, PrimaryPostgresCrash, Rolling)
	default:
		all = ShortSchedule(store)
	}
	return all[rng.IntN(len(all))]
}

// RunNemesis runs faults with calm stretches between them: the schedule
// once, then (until deadline, for a long run) random faults. It returns the
// faults and the phases as they happened; an error means the cluster could
// not be made whole again, and ends the run.
func RunNemesis(ctx context.Context, c *Cluster, schedule Schedule, deadline time.Time, store string, rng *rand.Rand, calm time.Duration) ([]FaultRecord, []Phase, error) {
	var faults []FaultRecord
	var phases []Phase
	next := func(i int) (Fault, bool) {
		if i < len(schedule) {
			return schedule[i], true
		}
		if time.Now().Add(calm).Before(deadline) {
			return RandomFault(store, rng), true
		}
		return Fault{}, false
	}
	for i := 0; ctx.Err() == nil; i++ {
		start := c.History.Now()
		sleep(ctx, calm)
		phases = append(phases, Phase{"calm", start, c.History.Now()})
		f, ok := next(i)
		if !ok || ctx.Err() != nil {
			break
		}
		rec := FaultRecord{Name: f.Name, Start: c.History.Now()}
		if c.Logf != nil {
			c.Logf("fault %d: %s", i+1, f.Name)
		}
		rec.Err = f.run(ctx, c, rng, &rec)
		rec.End = c.History.Now()
		faults = append(faults, rec)
		phases = append(phases, Phase{f.Name, rec.Start, rec.End})
		if rec.Err != nil {
			return faults, phases, fmt.Errorf("%s (%s): %w", f.Name, rec.Detail, rec.Err)
		}
	}
	// The loop ends when ctx does: that is the run's normal end, not a
	// failure, so ctx.Err() is not returned.
	return faults, phases, nil //nolint:nilerr // see above
}
