// Package pgtest runs throwaway PostgreSQL clusters for tests: a real
// server made with initdb and pg_ctl from the installed PostgreSQL binaries,
// listening only on a Unix socket in a private temporary directory, and
// removed afterwards. No mocks: the stores and the service talk to it as
// they talk to a production database.
//
// A test package shares one cluster (started on first use, or while the
// first tests run with MainStartingCluster; stopped by Main) and gives each
// test a database of its own: an empty one with NewDatabase, or one with a
// schema in place with NewMigratedDatabase. Tests may run in parallel. A
// database a test is done with is handed to the next one once it is as a
// fresh one (reuse.go): creating databases cost more than most tests. A
// test that stops and starts the server gets a cluster of its own
// with NewCluster (started while the first tests run, for as many as
// MainStartingClusters says). Every cluster starts from a copy of one data directory
// that initdb made (initdb.go).
//
// PostgreSQL refuses to run as root. When the tests run as root (CI
// containers do), initdb, pg_ctl and the server run as the unprivileged user
// "nobody", and the cluster's directory belongs to that user.
//
// When the PostgreSQL binaries are missing, tests skip with a loud reason on
// a laptop and fail when CI=true (.ci/run installs Debian's postgresql).
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the cluster's superuser; every database belongs to it.
const Superuser = "postgres"

// port names the socket file (.s.PGSQL.5432). Nothing listens on TCP, so it
// cannot collide with another server (a TCP cluster has a free port of its
// own instead, see NewTCPCluster).
const port = 5432

// unprivilegedUser runs the server when the tests run as root.
const unprivilegedUser = "nobody"

// serverSettings are appended to postgresql.conf: no TCP listener, the
// socket in the cluster's own directory, and room for the connection pools
// that concurrent tests open. Durability settings stay at their defaults
// (fsync on): the tests and benchmarks measure the real thing.
var serverSettings = []string{
	"listen_addresses = ''",
	"max_connections = 300",
	"log_min_error_statement = panic", // the tests provoke errors on purpose
}

// Cluster is a PostgreSQL cluster in a temporary directory.
type Cluster struct {
	dir    string // the cluster's directory: data/, the socket, the log
	binDir string
	port   int                 // names the socket; the TCP port when tcp
	tcp    bool                // also listening on 127.0.0.1:port
	cred   *syscall.Credential // the unprivileged user when running as root
	dbs    atomic.Int64        // databases created, for unique names
	reuse  reusePool           // databases tests are done with (reuse.go)

	mu      sync.Mutex
	running bool
}

// NewCluster starts a cluster of the test's own and removes it when the test
// ends. Use it when the test stops the server; otherwise NewDatabase is
// cheaper.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := early.take(StartCluster) // one MainStartingClusters began, if any
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := c.Destroy(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// errNoBinaries means the PostgreSQL server programs are not installed.
var errNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found in PATH or /usr/lib/postgresql/*/bin; install Debian's postgresql package")

// unavailable ends a test that cannot get a server: a skip with a loud
// reason when the binaries are missing on a laptop, a failure otherwise and
// always under CI=true.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, errNoBinaries) && os.Getenv("CI") != "true" {
		t.Skipf("SKIPPED, NOT TESTED: %v", err)
	}
	t.Fatalf("pgtest: %v", err)
}

// StartCluster runs initdb and starts the server. The caller removes the
// cluster with Destroy; tests use NewCluster or NewDatabase instead.
func StartCluster() (c *Cluster, err error) {
	return startCluster(port, false)
}

// NewTCPCluster is NewCluster for a server that also listens on TCP, on a
// free port of the loopback interface: for a test that puts a TCP fault
// proxy between the service and the database.
func NewTCPCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startTCPCluster()
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := c.Destroy(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

func startTCPCluster() (*Cluster, error) {
	// A port the kernel just gave out and took back: another process could
	// take it before the server does, in which case the start fails loudly.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return startCluster(p, true)
}

func startCluster(port int, tcp bool) (c *Cluster, err error) {
	binDir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	// A directory of our own, short enough for a socket path (108 bytes).
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{dir: dir, binDir: binDir, port: port, tcp: tcp, cred: cred}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if err := c.initdb(); err != nil { // initdb.go
		return nil, err
	}
	settings := slices.Concat(serverSettings,
		[]string{"unix_socket_directories = '" + dir + "'", "port = " + strconv.Itoa(port)})
	if tcp {
		settings = append(settings, "listen_addresses = '127.0.0.1'") // the later line wins
	}
	if err := c.appendConf("pgtest", settings...); err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// appendConf adds settings to the server's postgresql.conf under a
// comment: a later line wins over an earlier one of the same setting.
func (c *Cluster) appendConf(comment string, settings ...string) error {
	f, err := os.OpenFile(filepath.Join(c.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString("\n# " + comment + "\n" + strings.Join(settings, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) logFile() string { return filepath.Join(c.dir, "postgres.log") }

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.run("pg_ctl", "start", "--wait", "--timeout=120", "-D", c.dataDir(), "-l", c.logFile()); err != nil {
		return err
	}
	c.running = true
	return nil
}

// Stop shuts the server down the way an operator or a failover does:
// "fast" mode rolls back open transactions and closes every connection.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.run("pg_ctl", "stop", "--wait", "--timeout=120", "-m", "fast", "-D", c.dataDir()); err != nil {
		return err
	}
	c.running = false
	return nil
}

// StopImmediate stops the server the way a crash does: "immediate" mode
// ends every server process at once, without a checkpoint; the next Start
// recovers from the write-ahead log.
func (c *Cluster) StopImmediate() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.run("pg_ctl", "stop", "--wait", "--timeout=120", "-m", "immediate", "-D", c.dataDir()); err != nil {
		return err
	}
	c.running = false
	return nil
}

// Destroy stops the server if it runs and removes the cluster's directory.
func (c *Cluster) Destroy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if c.running {
		// Immediate: nothing of a throwaway cluster needs to be kept.
		errs = append(errs, c.run("pg_ctl", "stop", "--wait", "-m", "immediate", "-D", c.dataDir()))
		c.running = false
	}
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}

// run runs one of the PostgreSQL programs as the server's user. A failure
// carries the program's output and the end of the server log.
func (c *Cluster) run(program string, args ...string) error {
	// A bound for a program that hangs; pg_ctl waits at most --timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	//nolint:gosec // G204: the PostgreSQL programs, with arguments of our own
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, program), args...)
	cmd.Dir = c.dir // the user's cwd may not be readable by the server's user
	cmd.Env = []string{"PATH=" + c.binDir + ":/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(c.logFile())
		return fmt.Errorf("%s %s: %v\n%s\nserver log:\n%s", program, strings.Join(args, " "), err, out, tail(log, 40))
	}
	return nil
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], nil)
}

// URL is the connection URL of database db on this cluster, as the
// superuser over the Unix socket.
func (c *Cluster) URL(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Path:     "/" + db,
		RawQuery: url.Values{"host": {c.dir}, "port": {strconv.Itoa(c.port)}, "sslmode": {"disable"}}.Encode(),
	}
	return u.String()
}

// TCPAddr is the server's TCP address (host:port) on a cluster made by
// NewTCPCluster, "" on one that listens only on its socket.
func (c *Cluster) TCPAddr() string {
	if !c.tcp {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port))
}

// TCPURL is the URL of database db reached over TCP at addr (host:port):
// the server's TCPAddr, or a proxy in front of it.
func (c *Cluster) TCPURL(db, addr string) string {
	host, p, _ := net.SplitHostPort(addr)
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Path:     "/" + db,
		RawQuery: url.Values{"host": {host}, "port": {p}, "sslmode": {"disable"}}.Encode(),
	}
	return u.String()
}

// SocketDir is the directory of the server's Unix socket: the value for
// PGHOST.
func (c *Cluster) SocketDir() string { return c.dir }

// NewDatabase returns the URL of an empty database on this cluster, for
// the test alone until it ends; then it is emptied for another test, or
// dropped (reuse.go).
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	return c.newDatabase(t, nil)
}

// CreateDatabase creates an empty database with a new name and returns the
// name.
func (c *Cluster) CreateDatabase() (string, error) {
	name := "test_" + strconv.FormatInt(c.dbs.Add(1), 10)
	// template0: nothing a previous test put into template1 leaks in.
	if err := c.exec("CREATE DATABASE " + name + " TEMPLATE template0"); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return name, nil
}

// exec runs one statement in the maintenance database.
func (c *Cluster) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// findBinDir finds the directory of initdb and pg_ctl: Debian keeps them
// out of PATH, under /usr/lib/postgresql/<major>/bin.
func findBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// The newest major version first: 9.6 < 10 < 17.
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errNoBinaries
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(strings.Split(filepath.Base(filepath.Dir(binDir)), ".")[0])
	return n
}

// serverCredential is the user the server runs as: the current one, or
// "nobody" when that is root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(unprivilegedUser)
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as an unprivileged user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
