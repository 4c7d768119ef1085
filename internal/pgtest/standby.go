package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/internal/testmode"
)

// Pair is a primary with one synchronous streaming standby: a commit on
// the primary returns once the standby has flushed its WAL
// (synchronous_standby_names = '*', synchronous_commit = on), the
// recommended production shape of a highly available PostgreSQL. Both
// listen on Unix sockets of their own; MultiHostURL names both, as an
// application reaches a cluster that fails over.
type Pair struct {
	Primary *Cluster
	Standby *Cluster
}

// NewPair starts a primary and a synchronous standby streaming from it,
// removed when the test ends. Database db exists on both. Under -short the
// test skips: two servers and a base backup take seconds to start, and the
// tests of a pair wait on replication timeouts besides; there are a dozen
// such tests, too many for the inner loop's minute. make test runs them.
func NewPair(t testing.TB, db string) *Pair {
	t.Helper()
	testmode.SkipIfShort(t, "starts a PostgreSQL primary and a synchronous standby (pgtest.NewPair)")
	primary := NewCluster(t)
	if err := primary.exec("CREATE DATABASE " + db + " TEMPLATE template0"); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	standby, err := startStandby(primary)
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		// The standby's walreceiver may have been stopped by the test.
		if pid, err := standby.walReceiverPID(); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		if err := standby.Destroy(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	if err := synchronize(primary); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return &Pair{Primary: primary, Standby: standby}
}

// StartPair is NewPair outside a test: for a benchmark of the
// synchronous shape. The caller removes both servers with Destroy.
func StartPair(db string) (p *Pair, err error) {
	primary, err := StartCluster()
	if err != nil {
		return nil, err
	}
	p = &Pair{Primary: primary}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Destroy())
		}
	}()
	if err := primary.exec("CREATE DATABASE " + db + " TEMPLATE template0"); err != nil {
		return p, fmt.Errorf("create database: %w", err)
	}
	if p.Standby, err = startStandby(primary); err != nil {
		return p, err
	}
	return p, synchronize(primary)
}

// Destroy removes both servers of a pair made by StartPair.
func (p *Pair) Destroy() error {
	var err error
	if p.Standby != nil {
		if pid, perr := p.Standby.walReceiverPID(); perr == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT) // stalled, it would hold up the standby's shutdown
		}
		err = p.Standby.Destroy()
	}
	return errors.Join(err, p.Primary.Destroy())
}

// synchronize makes primary's commits wait for its standby, once the
// standby streams: until then every commit would wait for it.
func synchronize(primary *Cluster) error {
	if err := poll.Until(context.Background(), 20*time.Millisecond, time.Minute, func() (bool, error) {
		n, err := primary.queryInt("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
		return n == 1, err
	}); err != nil {
		return fmt.Errorf("the standby does not stream: %w", err)
	}
	for _, sql := range []string{
		"ALTER SYSTEM SET synchronous_standby_names = '*'",
		"ALTER SYSTEM SET synchronous_commit = 'on'",
		"SELECT pg_reload_conf()",
	} {
		if err := primary.exec(sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	if err := poll.Until(context.Background(), 20*time.Millisecond, time.Minute, func() (bool, error) {
		n, err := primary.queryInt("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")
		return n == 1, err
	}); err != nil {
		return fmt.Errorf("the standby is not synchronous: %w", err)
	}
	return nil
}

// startStandby makes a standby of primary with pg_basebackup -R (which
// writes primary_conninfo and standby.signal) and starts it.
func startStandby(primary *Cluster) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	// pg_basebackup sits beside the real pg_ctl, which PATH may only link to.
	pgCtl, err := filepath.EvalSymlinks(filepath.Join(primary.binDir, "pg_ctl"))
	if err != nil {
		return nil, err
	}
	c = &Cluster{dir: dir, binDir: filepath.Dir(pgCtl), port: primary.port, cred: primary.cred}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return nil, err
		}
	}
	if err := c.run("pg_basebackup", "-D", c.dataDir(), "-R", "-X", "stream", "--no-sync", "--checkpoint=fast",
		"-h", primary.dir, "-p", strconv.Itoa(primary.port), "-U", Superuser); err != nil {
		return nil, err
	}
	// The copied postgresql.conf names the primary's socket directory: the
	// later line wins.
	if err := c.appendConf("pgtest standby", "unix_socket_directories = '"+dir+"'", "wal_receiver_status_interval = 1s"); err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// MultiHostURL is the URL of database db over both servers, primary first,
// with target_session_attrs=read-write: a client connects to whichever of
// them accepts writes, as after a failover.
func (p *Pair) MultiHostURL(db string) string {
	u := url.URL{
		Scheme: "postgres",
		User:   url.User(Superuser),
		Path:   "/" + db,
		RawQuery: url.Values{
			"host":                 {p.Primary.dir + "," + p.Standby.dir},
			"port":                 {strconv.Itoa(p.Primary.port) + "," + strconv.Itoa(p.Standby.port)},
			"sslmode":              {"disable"},
			"target_session_attrs": {"read-write"},
		}.Encode(),
	}
	return u.String()
}

// StallStandby stops the standby's WAL receiver (SIGSTOP): the primary's
// commits wait for it until ResumeStandby.
func (p *Pair) StallStandby(t testing.TB) {
	t.Helper()
	pid, err := p.Standby.walReceiverPID()
	if err != nil {
		t.Fatalf("pgtest: the standby's walreceiver: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("pgtest: stop the walreceiver: %v", err)
	}
}

// ResumeStandby lets the WAL receiver stopped by StallStandby go on.
func (p *Pair) ResumeStandby(t testing.TB) {
	t.Helper()
	pid, err := p.Standby.walReceiverPID()
	if err != nil {
		t.Fatalf("pgtest: the standby's walreceiver: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("pgtest: resume the walreceiver: %v", err)
	}
}

// walReceiverPID finds the standby's walreceiver process by its title:
// a stopped walreceiver cannot answer pg_stat_wal_receiver.
func (c *Cluster) walReceiverPID() (int, error) {
	postmaster, err := c.postmasterPID()
	if err != nil {
		return 0, err
	}
	return ChildWithTitle(postmaster, "walreceiver")
}

// postmasterPID reads the server's process id from postmaster.pid.
func (c *Cluster) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// Kill ends the server with SIGKILL, as a crashed machine would: no
// shutdown, no checkpoint; its other processes exit as they notice. It
// returns once the postmaster is gone.
func (c *Cluster) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid, err := c.postmasterPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	c.running = false
	return poll.Until(context.Background(), 20*time.Millisecond, time.Minute, func() (bool, error) {
		return syscall.Kill(pid, 0) != nil, fmt.Errorf("postmaster %d still runs", pid)
	})
}

// Promote makes a standby the primary (pg_ctl promote) and returns once it
// accepts writes.
func (c *Cluster) Promote() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run("pg_ctl", "promote", "--wait", "--timeout=120", "-D", c.dataDir())
}

// QueryInt runs a query returning one integer in database db: for a
// test's look at a server.
func (c *Cluster) QueryInt(db, sql string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(db))
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	err = conn.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

func (c *Cluster) queryInt(sql string) (int64, error) { return c.QueryInt("postgres", sql) }
