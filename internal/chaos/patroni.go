package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
)

// HADatabase is a highly available PostgreSQL: two nodes, each a
// PostgreSQL run by Patroni, with one etcd as Patroni's store of who leads.
// Patroni's synchronous mode (strict) makes the other node the synchronous
// standby: a commit returns once the standby has its WAL, and with the
// standby gone commits wait rather than go on alone. Patroni fails over
// when the leader's lock expires (ttl 10 s) and only to the synchronous
// standby; the old leader rejoins as a standby (pg_rewind).
//
// Each node's PostgreSQL is reached for replication through a fault proxy
// (its Patroni connect_address), so that the nemesis can partition the
// primary from the standby; plantstore reaches the nodes through proxies
// of its own (see Run).
type HADatabase struct {
	dir     string
	binDir  string
	cred    *syscall.Credential
	etcd    *exec.Cmd
	etcdURL string
	Nodes   []*PatroniNode
}

// PatroniNode is one node: Patroni and the PostgreSQL it runs.
type PatroniNode struct {
	Name     string
	PGPort   int         // PostgreSQL's own port
	RESTPort int         // Patroni's REST API
	Repl     *FaultProxy // the node as other nodes reach it for replication
	dir      string
	db       *HADatabase

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartHADatabase starts etcd and two Patroni nodes in dir and waits until
// one leads and the other streams as its synchronous standby.
func StartHADatabase(ctx context.Context, dir string) (*HADatabase, error) {
	for _, prog := range []string{"patroni", "etcd"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("%w: %s (apt-get install patroni etcd-server)", ErrNoHATools, prog)
		}
	}
	binDir, err := pgtest.BinDir()
	if err != nil {
		return nil, err
	}
	// Patroni runs the server's other programs (pg_controldata, pg_rewind)
	// from the same directory: the one pg_ctl really is in, not a
	// directory of links to a few of them.
	if real, err := filepath.EvalSymlinks(filepath.Join(binDir, "pg_ctl")); err == nil {
		binDir = filepath.Dir(real)
	}
	cred, err := pgtest.ServerCredential()
	if err != nil {
		return nil, err
	}
	h := &HADatabase{dir: filepath.Join(dir, "ha"), binDir: binDir, cred: cred}
	if err := h.mkdir(h.dir); err != nil {
		return nil, err
	}
	if err := h.startEtcd(); err != nil {
		h.Stop()
		return nil, err
	}
	for i := range 2 {
		n := &PatroniNode{Name: "pg" + strconv.Itoa(i), dir: filepath.Join(h.dir, "pg"+strconv.Itoa(i)), db: h}
		if n.PGPort, err = FreePort(); err == nil {
			n.RESTPort, err = FreePort()
		}
		if err == nil {
			n.Repl, err = NewFaultProxy("repl-"+n.Name, "127.0.0.1:"+strconv.Itoa(n.PGPort))
		}
		if err == nil {
			err = h.mkdir(n.dir)
		}
		if err == nil {
			err = n.writeConfig()
		}
		if err != nil {
			h.Stop()
			return nil, err
		}
		h.Nodes = append(h.Nodes, n)
	}
	// The first bootstraps the cluster; the second then copies it.
	for i, n := range h.Nodes {
		if err := n.Start(); err != nil {
			h.Stop()
			return nil, err
		}
		if _, err := h.waitHealthy(ctx, i+1); err != nil {
			h.Stop()
			return nil, err
		}
	}
	return h, nil
}

// ErrNoHATools means Patroni or etcd is not installed.
var ErrNoHATools = errors.New("the highly available database needs Patroni and etcd")

func indexOf(nodes []*PatroniNode, n *PatroniNode) int {
	for i, m := range nodes {
		if m == n {
			return i
		}
	}
	return -1
}

func (h *HADatabase) mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if h.cred != nil {
		return os.Chown(dir, int(h.cred.Uid), int(h.cred.Gid))
	}
	return nil
}

// command runs a program as the server's user.
func (h *HADatabase) command(log string, name string, args ...string) (*exec.Cmd, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	//nolint:gosec // G204: the harness's own programs
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + h.dir, "LANG=C.UTF-8"}
	// Gone with the test, should it be killed before it stops them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: h.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait(); f.Close() }()
	return cmd, nil
}

func (h *HADatabase) startEtcd() error {
	client, err := FreePort()
	if err != nil {
		return err
	}
	peer, err := FreePort()
	if err != nil {
		return err
	}
	data := filepath.Join(h.dir, "etcd")
	if err := h.mkdir(data); err != nil {
		return err
	}
	h.etcdURL = "127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	h.etcd, err = h.command(filepath.Join(h.dir, "etcd.log"), "etcd", "--name", "e0", "--data-dir", filepath.Join(data, "data"),
		"--listen-client-urls", "http://"+h.etcdURL, "--advertise-client-urls", "http://"+h.etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "e0="+peerURL,
		// Patroni's etcd client speaks etcd's v2 API.
		"--enable-v2=true")
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	return poll.Until(context.Background(), 100*time.Millisecond, time.Minute, func() (bool, error) {
		resp, err := hc.Get("http://" + h.etcdURL + "/health")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("etcd /health: %d", resp.StatusCode)
	})
}

// writeConfig writes the node's patroni.yml. The timings are short so
// that a run sees many failovers: the leader lock lives 10 s, Patroni's
// loop runs every second. The replication timeouts keep PostgreSQL's
// defaults (60 s): a standby stalled for less stays connected and stays
// the synchronous standby, the one Patroni fails over to.
func (n *PatroniNode) writeConfig() error {
	conf := fmt.Sprintf(`scope: chaos
name: %[1]s
log:
  level: WARNING
  dir: %[2]s
restapi:
  listen: 127.0.0.1:%[3]d
  connect_address: 127.0.0.1:%[3]d
etcd:
  host: %[4]s
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    synchronous_mode: true
    synchronous_mode_strict: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        synchronous_commit: "on"
        wal_log_hints: "on"
        max_connections: 300
        wal_receiver_status_interval: 1s
  initdb:
  - encoding: UTF8
  - auth: trust
  pg_hba:
  - local all all trust
  - host all all 127.0.0.1/32 trust
  - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[5]d
  connect_address: %[6]s
  data_dir: %[2]s/data
  bin_dir: %[7]s
  pgpass: %[2]s/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: %[2]s
    log_min_error_statement: panic
`, n.Name, n.dir, n.RESTPort, n.db.etcdURL, n.PGPort, n.Repl.Addr(), n.db.binDir)
	path := filepath.Join(n.dir, "patroni.yml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	if n.db.cred != nil {
		return os.Chown(path, int(n.db.cred.Uid), int(n.db.cred.Gid))
	}
	return nil
}

// Start runs the node's Patroni, which starts (or bootstraps, or rejoins
// with) its PostgreSQL.
func (n *PatroniNode) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("%s: Patroni already runs", n.Name)
	}
	cmd, err := n.db.command(filepath.Join(n.dir, "patroni.out"), "patroni", filepath.Join(n.dir, "patroni.yml"))
	if err != nil {
		return err
	}
	n.cmd = cmd
	return nil
}

// Crash kills the node as a lost machine dies: Patroni and PostgreSQL
// with SIGKILL, no shutdown. The leader lock then expires and the standby
// takes over.
func (n *PatroniNode) Crash() error {
	n.mu.Lock()
	cmd := n.cmd
	n.cmd = nil
	n.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
	}
	pid, err := n.PostmasterPID()
	if err == nil {
		killServer(pid)
		// Its children exit as they notice; the port is free once the
		// postmaster is gone.
		_ = poll.Until(context.Background(), 100*time.Millisecond, 30*time.Second, func() (bool, error) {
			return syscall.Kill(pid, 0) != nil, nil
		})
	}
	return nil
}

// killServer ends a PostgreSQL server at once, all its processes, as a
// lost machine does. Killing the postmaster alone would not: its backends
// run on until they notice, and one waiting for the standby then ends its
// wait and makes its commit visible to the others, a commit the standby
// never had (PostgreSQL's reaction to a dead postmaster).
func killServer(postmaster int) {
	if pgid, err := syscall.Getpgid(postmaster); err == nil && pgid == postmaster {
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // one signal to the whole group
		return
	}
	// Not a group of its own: stop every process, then kill them.
	pids := append(pgtest.Children(postmaster), postmaster)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// PostmasterPID reads the node's PostgreSQL process id.
func (n *PatroniNode) PostmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(n.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// WALReceiverPID finds the node's walreceiver by its process title (a
// stopped walreceiver cannot answer pg_stat_wal_receiver).
func (n *PatroniNode) WALReceiverPID() (int, error) {
	postmaster, err := n.PostmasterPID()
	if err != nil {
		return 0, err
	}
	return pgtest.ChildWithTitle(postmaster, "walreceiver")
}

// Member is a node as Patroni's /cluster describes it.
type Member struct {
	Name  string `json:"name"`
	Role  string `json:"role"`  // leader, sync_standby, replica
	State string `json:"state"` // running, streaming, starting, ...
	TL    int    `json:"timeline"`
}

// Members asks the nodes' REST APIs, in turn, for the cluster's members.
func (h *HADatabase) Members() ([]Member, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for _, n := range h.Nodes {
		resp, err := client.Get("http://127.0.0.1:" + strconv.Itoa(n.RESTPort) + "/cluster")
		if err != nil {
			last = err
			continue
		}
		var c struct{ Members []Member }
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			last = err
			continue
		}
		return c.Members, nil
	}
	return nil, last
}

// Leader is the node that leads now, or an error when none does.
func (h *HADatabase) Leader() (*PatroniNode, error) {
	ms, err := h.Members()
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.Role == "leader" && m.State == "running" {
			return h.node(m.Name)
		}
	}
	return nil, fmt.Errorf("no leader among %v", ms)
}

// Standby is the synchronous standby now, or an error when there is none.
func (h *HADatabase) Standby() (*PatroniNode, error) {
	ms, err := h.Members()
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.Role == "sync_standby" {
			return h.node(m.Name)
		}
	}
	return nil, fmt.Errorf("no synchronous standby among %v", ms)
}

func (h *HADatabase) node(name string) (*PatroniNode, error) {
	for _, n := range h.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node %q", name)
}

// waitHealthy waits until n nodes are members, one the leader and the
// others synchronous standbys streaming from it, and returns the leader.
func (h *HADatabase) waitHealthy(ctx context.Context, n int) (*PatroniNode, error) {
	var leader *PatroniNode
	err := poll.Until(ctx, 100*time.Millisecond, 3*time.Minute, func() (bool, error) {
		ms, err := h.Members()
		if err != nil {
			return false, err
		}
		leaders, standbys := 0, 0
		for _, m := range ms {
			switch {
			case m.Role == "leader" && m.State == "running":
				leaders++
				leader, _ = h.node(m.Name)
			case m.Role == "sync_standby" && (m.State == "streaming" || m.State == "running"):
				standbys++
			}
		}
		return leaders == 1 && leaders+standbys == n, fmt.Errorf("members %v", ms)
	})
	if err != nil {
		return nil, fmt.Errorf("the HA database is not whole again: %w (logs in %s)", err, h.dir)
	}
	return leader, nil
}

// Healthy waits until both nodes are back: a leader and its synchronous
// standby.
func (h *HADatabase) Healthy(ctx context.Context) (*PatroniNode, error) {
	return h.waitHealthy(ctx, len(h.Nodes))
}

// Switchover asks Patroni to hand the lead from leader to the standby.
func (h *HADatabase) Switchover(leader, candidate *PatroniNode) error {
	body, _ := json.Marshal(map[string]string{"leader": leader.Name, "candidate": candidate.Name})
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Post("http://127.0.0.1:"+strconv.Itoa(leader.RESTPort)+"/switchover", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var msg bytes.Buffer
	_, _ = msg.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("switchover: %d %s", resp.StatusCode, msg.String())
	}
	return nil
}

// Exec runs a statement on a node as the superuser, over its own port.
func (n *PatroniNode) Exec(ctx context.Context, db, sql string) (int64, error) {
	conn, err := pgx.Connect(ctx, n.URL(db, ""))
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	tag, err := conn.Exec(ctx, sql)
	return tag.RowsAffected(), err
}

// URL is the node's URL for database db, over addr (host:port; "" for
// the node's own port).
func (n *PatroniNode) URL(db, addr string) string {
	if addr == "" {
		addr = "127.0.0.1:" + strconv.Itoa(n.PGPort)
	}
	return "postgres://postgres@" + addr + "/" + db + "?sslmode=disable"
}

// MultiHostURL is database db over every address given (one per node),
// with target_session_attrs=read-write: a client connects to whichever
// node accepts writes, as it must after a failover.
func MultiHostURL(db string, addrs []string) string {
	return "postgres://postgres@" + strings.Join(addrs, ",") + "/" + db + "?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

// Stop ends every node and etcd.
func (h *HADatabase) Stop() {
	for _, n := range h.Nodes {
		if pid, err := n.WALReceiverPID(); err == nil {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		_ = n.Crash()
		n.Repl.Close()
	}
	if h.etcd != nil {
		_ = h.etcd.Process.Kill()
	}
}
