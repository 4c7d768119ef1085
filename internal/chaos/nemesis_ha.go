package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
)

// The faults of the highly available database (postgres-ha). Each ends
// once Patroni has a leader and a streaming synchronous standby again and
// every replica is back in HAProxy.
//
// A stall lasts past plantstore's call deadline (10 s by default): that is
// when a commit waiting for the standby meets its caller's deadline, the
// moment a client that abandons or cancels the commit turns it into one
// the primary alone has.
var (
	KillPrimary = Fault{"kill-primary", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		down := time.Duration(1000+rng.IntN(2001)) * time.Millisecond
		return crashLeader(ctx, c, rec, down, "")
	}}
	Switchover = Fault{"switchover", func(ctx context.Context, c *Cluster, _ *rand.Rand, rec *FaultRecord) error {
		leader, standby, err := pair(ctx, c)
		if err != nil {
			return err
		}
		rec.Detail = fmt.Sprintf("Patroni switchover from %s to %s", leader.Name, standby.Name)
		if err := c.HA.Switchover(leader, standby); err != nil {
			return err
		}
		return c.haWhole(ctx)
	}}
	StallStandby = Fault{"stall-standby", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		_, standby, err := pair(ctx, c)
		if err != nil {
			return err
		}
		hold := time.Duration(11000+rng.IntN(4001)) * time.Millisecond
		rec.Detail = fmt.Sprintf("SIGSTOP %s's walreceiver for %s", standby.Name, hold)
		resume, err := stall(standby)
		if err != nil {
			return err
		}
		sleep(ctx, hold)
		if err := resume(); err != nil {
			return err
		}
		return c.haWhole(ctx)
	}}
	// StallFailover partitions the standby from the primary's replication
	// past the call deadline, then the primary dies: a commit the primary
	// alone had is lost, and so is any 200 given for it. (A partition, not
	// a stopped walreceiver: the WAL a stopped walreceiver has not read
	// waits in its socket's buffer and reaches the standby once it runs
	// again, primary dead or not.)
	StallFailover = Fault{"stall+failover", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		leader, standby, err := pair(ctx, c)
		if err != nil {
			return err
		}
		hold := time.Duration(11000+rng.IntN(4001)) * time.Millisecond
		if err := leader.Repl.Blackhole(); err != nil {
			return err
		}
		sleep(ctx, hold)
		return crashLeader(ctx, c, rec, time.Second, fmt.Sprintf("%s partitioned from the primary's replication for %s, then ", standby.Name, hold), healRepl(leader))
	}}
	// CancelFailover is an operator's cancel of the commits waiting for the
	// standby (each then committed on the primary alone, with a WARNING),
	// then the primary's death.
	CancelFailover = Fault{"cancel+failover", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		leader, standby, err := pair(ctx, c)
		if err != nil {
			return err
		}
		if err := leader.Repl.Blackhole(); err != nil {
			return err
		}
		sleep(ctx, 2*time.Second)
		canceled := int64(0)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); sleep(ctx, 200*time.Millisecond) {
			n, err := leader.Exec(ctx, "postgres", "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
			if err != nil {
				_ = healRepl(leader)()
				return err
			}
			canceled += n
		}
		return crashLeader(ctx, c, rec, time.Second, fmt.Sprintf("%s partitioned from the primary's replication, pg_cancel_backend of %d commits waiting for it, then ", standby.Name, canceled), healRepl(leader))
	}}
	// PartitionPrimary drops every byte between plantstore and the primary
	// (the standby stays reachable, and refuses writes): no failover, the
	// writes wait or fail until it heals.
	PartitionPrimary = Fault{"partition-primary", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		leader, _, err := pair(ctx, c)
		if err != nil {
			return err
		}
		k := indexOf(c.HA.Nodes, leader)
		hold := time.Duration(5000+rng.IntN(5001)) * time.Millisecond
		rec.Detail = fmt.Sprintf("every replica partitioned (blackhole) from the primary %s for %s", leader.Name, hold)
		for _, p := range c.Proxies {
			if err := p.Node(k).Blackhole(); err != nil {
				return err
			}
		}
		sleep(ctx, hold)
		for _, p := range c.Proxies {
			p.Node(k).Clear()
		}
		return c.haWhole(ctx)
	}}
	// PartitionReplication drops every byte between the standby and the
	// primary: commits wait for the standby until it heals.
	PartitionReplication = Fault{"partition-repl", func(ctx context.Context, c *Cluster, rng *rand.Rand, rec *FaultRecord) error {
		leader, standby, err := pair(ctx, c)
		if err != nil {
			return err
		}
		hold := time.Duration(5000+rng.IntN(5001)) * time.Millisecond
		rec.Detail = fmt.Sprintf("%s partitioned (blackhole) from the primary %s's replication for %s", standby.Name, leader.Name, hold)
		if err := leader.Repl.Blackhole(); err != nil {
			return err
		}
		sleep(ctx, hold)
		leader.Repl.Clear()
		return c.haWhole(ctx)
	}}
	// PrimaryPostgresCrash kills the primary's PostgreSQL alone: Patroni,
	// alive, restarts it (crash recovery) while it holds the lead.
	PrimaryPostgresCrash = Fault{"postgres-crash", func(ctx context.Context, c *Cluster, _ *rand.Rand, rec *FaultRecord) error {
		leader, _, err := pair(ctx, c)
		if err != nil {
			return err
		}
		pid, err := leader.PostmasterPID()
		if err != nil {
			return err
		}
		rec.Detail = fmt.Sprintf("SIGKILL of the primary %s's postmaster; Patroni restarts it", leader.Name)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return err
		}
		// Patroni's view lags the crash: wait for the new postmaster
		// before asking it whether the cluster is whole.
		if err := poll.Until(ctx, 100*time.Millisecond, 2*time.Minute, func() (bool, error) {
			p, err := leader.PostmasterPID()
			return err == nil && p != pid, fmt.Errorf("no new postmaster (%v)", err)
		}); err != nil {
			return err
		}
		return c.haWhole(ctx)
	}}
)

// pair is the leader and the synchronous standby, once there are both
// (the fault before may have ended while Patroni was still catching up).
func pair(ctx context.Context, c *Cluster) (leader, standby *PatroniNode, err error) {
	if leader, err = c.HA.Healthy(ctx); err != nil {
		return nil, nil, err
	}
	if standby, err = c.HA.Standby(); err != nil {
		return nil, nil, err
	}
	return leader, standby, nil
}

// healRepl ends a partition of the leader's replication link.
func healRepl(leader *PatroniNode) func() error {
	return func() error { leader.Repl.Clear(); return nil }
}

// stall stops the node's walreceiver; resume lets it go on.
func stall(n *PatroniNode) (resume func() error, err error) {
	pid, err := n.WALReceiverPID()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	return func() error { return syscall.Kill(pid, syscall.SIGCONT) }, nil
}

// crashLeader crashes the leader's node (Patroni and PostgreSQL, SIGKILL),
// runs then (a stalled standby resumed), waits until the other node leads,
// and after down starts the old leader's Patroni again, which rejoins as
// the standby.
func crashLeader(ctx context.Context, c *Cluster, rec *FaultRecord, down time.Duration, before string, then ...func() error) error {
	leader, err := c.HA.Leader()
	if err != nil {
		return err
	}
	rec.Detail, rec.KillsInFlight = fmt.Sprintf("%sSIGKILL of the primary %s (Patroni and PostgreSQL), restart after the failover and %s", before, leader.Name, down), true
	if err := leader.Crash(); err != nil {
		return err
	}
	for _, f := range then {
		if err := f(); err != nil {
			return err
		}
	}
	start := time.Now()
	// Patroni promotes only a standby it knows to be synchronous: one that
	// was disconnected for long (past wal_sender_timeout) is not, and then
	// nothing leads until the old primary is back. That is the safe answer,
	// recorded; the fault then ends with the old primary's return.
	if err := poll.Until(ctx, 100*time.Millisecond, 45*time.Second, func() (bool, error) {
		n, err := c.HA.Leader()
		if err != nil {
			return false, err
		}
		if n == leader {
			return false, fmt.Errorf("%s still leads", n.Name)
		}
		return true, nil
	}); err != nil {
		rec.Detail += fmt.Sprintf("; no failover: %v", err)
	} else {
		rec.Detail += fmt.Sprintf("; the standby led after %s", time.Since(start).Round(100*time.Millisecond))
	}
	sleep(ctx, down)
	if err := leader.Start(); err != nil {
		return err
	}
	return c.haWhole(ctx)
}

// haWhole waits for the database (a leader, its synchronous standby) and
// then for every replica.
func (c *Cluster) haWhole(ctx context.Context) error {
	if _, err := c.HA.Healthy(ctx); err != nil {
		return err
	}
	return c.whole(ctx)
}
