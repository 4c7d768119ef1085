package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/batching"
)

// With synchronous standbys a read must not answer until the standbys hold
// every commit it saw: an operator's cancel of a commit's wait for the
// standby (or a terminated backend) leaves that commit visible on the
// primary alone, and a failover takes it back. A commit written after the
// read, a barrier, does it: its wait for the standbys ends past every
// commit the read saw. Reads share barriers, as creates share statements:
// a read that has its answer queues for the next barrier to be sent, and
// one barrier commit (one WAL record, one flush, one standby round trip)
// answers every read queued before it was sent.
//
// Why a barrier sent after the read answered covers what the read saw,
// and why a barrier in flight already does not:
//
//   - A commit C is visible to the read's snapshot only if C left the
//     server's table of running transactions before the snapshot was taken,
//     and C inserts its commit record into the WAL before it leaves that
//     table (and, with synchronous standbys, before it waits for them).
//   - The read's statement takes its snapshot when it starts on the server,
//     so by the time its answer has reached the store, every commit it saw
//     has a commit record in the WAL.
//   - A barrier sent after that inserts its WAL record later, so at a
//     greater position: WAL positions are handed out in the order of
//     insertion, server-wide, whatever the session. Its commit returns
//     once the synchronous standbys have flushed the WAL up to its own
//     commit record, and WAL is replicated in order: they then hold C too.
//     A failover to one of them keeps C.
//   - A barrier sent before the read's answer came back may have written
//     its record before the read's snapshot was taken: a commit made
//     visible in between (a local-only one among them) lies past it, and
//     its wait says nothing of that commit. So a read never joins a
//     barrier in flight: it waits for the next, which a lane sends only
//     after taking the read from the queue (the read queues itself once it
//     has its answer).
//
// Most reads need no new barrier at all: one that completed already covers
// a read when every transaction the read saw ended (its snapshot, read in
// its round trip) the barrier's statement saw ended too. Each of those
// wrote its commit record before the barrier's snapshot was taken, so
// before the barrier's own commit record, and the barrier's wait covered
// them. The barrier's own transaction is the one exception allowed: it
// changed no data, so a read that saw it end showed nothing of it. On a
// cluster where nothing is written, one barrier then covers every read
// that follows; a write (any transaction id the barrier had not seen end:
// an insert, an autovacuum's analyze, another replica's barrier) makes
// the next reads share a new one. A standby that becomes synchronous later
// has caught up with the primary first (PostgreSQL counts a standby as
// synchronous only once it streams), so what a barrier covered stays
// covered, as a write's commit stays acknowledged.
//
// Why a commit, and snapshots rather than WAL positions: the standbys'
// flushed positions (pg_stat_replication) are shown only to privileged
// roles, and which of them a commit waits for (FIRST n, ANY n) would have
// to be worked out again outside the server; a barrier's commit is the
// server's own answer. Its own commit record lies past any position it can
// report, so a read after it would always find the WAL moved on; its
// transaction id, by contrast, is known, and left out of the check.
//
// The argument holds on one server: a barrier on another server (a
// connection opened to a new primary while the old one still answers,
// during a failover) says nothing of the first one's WAL. Each connection
// knows its server (serverSQL, read when it connects), and a read whose
// barrier ran on another server answers unavailable.
//
// Whether a barrier is needed at all is read in the read's own round trip
// (synchronousSQL): without synchronous standbys a read writes nothing, does
// not queue, and costs what the statement costs. The setting may change at
// run time (a failover manager empties it when no standby is left), so it is
// read each time; the barrier's own statement checks it again, as the read
// barrier always did.

// maxBarrierReads bounds the reads one barrier answers, and the reads
// queued for the next one: a barrier costs the same for any number, so the
// bound only keeps the queue's memory in check.
const maxBarrierReads = 4096

// barrierLanes is how many barriers may be in flight at once.
const barrierLanes = 1

// synchronousSQL follows each read in its round trip: whether the read
// needs a barrier, and a snapshot taken after the read's (it saw at least
// what the read saw end) for the covering check.
const synchronousSQL = `SELECT current_setting('synchronous_standby_names') <> '', pg_current_snapshot()::text`

// serverSQL names the server of a connection: two servers never share a
// postmaster start time and address, and one server keeps them while it
// runs (a promotion does not restart it). Over a Unix socket the address
// is null, and the start time alone tells the servers apart.
const serverSQL = `SELECT concat_ws(' ', pg_postmaster_start_time(), inet_server_addr(), inet_server_port())`

// serverKey is the key of a connection's CustomData that holds its server's
// name (serverSQL).
const serverKey = "plantstore.server"

// errOtherServer answers a read whose barrier ran on another server than
// the read: a failover is under way.
var errOtherServer = errors.New("the read barrier ran on another server than the read (a failover is under way)")

// nameServer reads the server of a new connection: pgxpool's AfterConnect.
func nameServer(ctx context.Context, conn *pgx.Conn) error {
	var name string
	if err := conn.QueryRow(ctx, serverSQL).Scan(&name); err != nil {
		return err
	}
	conn.PgConn().CustomData()[serverKey] = name
	return nil
}

// serverOf is the server of conn, as nameServer read it.
func serverOf(conn *pgx.Conn) string {
	name, _ := conn.PgConn().CustomData()[serverKey].(string)
	return name
}

// snapshot is a pg_snapshot: the transactions a statement saw as ended
// are those below xmax that are not in xip.
type snapshot struct {
	xmax uint64
	xip  []uint64 // sorted
}

// parseSnapshot reads a pg_snapshot's text, "xmin:xmax:xip,xip,...".
func parseSnapshot(text string) (snapshot, error) {
	parts := strings.Split(text, ":")
	if len(parts) != 3 {
		return snapshot{}, fmt.Errorf("snapshot %q: want xmin:xmax:xip", text)
	}
	xmax, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return snapshot{}, fmt.Errorf("snapshot %q: %w", text, err)
	}
	snap := snapshot{xmax: xmax}
	if parts[2] != "" {
		for _, f := range strings.Split(parts[2], ",") {
			x, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return snapshot{}, fmt.Errorf("snapshot %q: %w", text, err)
			}
			snap.xip = append(snap.xip, x)
		}
		slices.Sort(snap.xip)
	}
	return snap, nil
}

// ended reports whether the snapshot saw transaction x as ended.
func (s snapshot) ended(x uint64) bool {
	_, running := slices.BinarySearch(s.xip, x)
	return x < s.xmax && !running
}

// maxUncovered bounds the transactions a covering check looks at: past
// it, a read queues for a barrier of its own (many writes happened since
// the last barrier: a new one costs little among them).
const maxUncovered = 256

// coverage is what a barrier that committed covers: the transactions its
// statement's snapshot saw ended, on its server.
type coverage struct {
	server string
	snap   snapshot
	xid    uint64 // the barrier's own transaction: it changed no data
}

// covers reports whether every transaction a read on server saw ended,
// but the barrier's own, the barrier saw ended too.
func (c coverage) covers(server string, read snapshot) bool {
	if c.server == "" || c.server != server || read.xmax > c.snap.xmax+maxUncovered {
		return false
	}
	for x := c.snap.xmax; x < read.xmax; x++ {
		if x != c.xid && read.ended(x) {
			return false
		}
	}
	for _, x := range c.snap.xip {
		if x != c.xid && read.ended(x) {
			return false
		}
	}
	return true
}

// pendingRead is a read waiting for a barrier.
type pendingRead struct {
	ctx    context.Context
	server string                          // where the read ran
	done   chan batching.Outcome[struct{}] // buffered: a lane never blocks on a caller
	left   atomic.Bool                     // its caller stopped waiting: no barrier needed for it
}

// readBarriers sends the barriers that reads share.
type readBarriers struct {
	s       *Store
	queue   *batching.Queue[*pendingRead]
	mu      sync.Mutex // guards the lanes' start against close
	started bool
	closed  bool
	stopped sync.WaitGroup
	last    coverage     // the newest barrier's, under mu
	sent    atomic.Int64 // barrier commits sent, for the tests
}

func newReadBarriers(s *Store) *readBarriers {
	return &readBarriers{s: s, queue: batching.NewQueue[*pendingRead](maxBarrierReads)}
}

// start spawns the lanes at the first read that needs a barrier: reads
// need no Start, and a store on a single server never spawns them.
func (r *readBarriers) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	for range barrierLanes {
		r.stopped.Go(r.lane)
	}
}

// close answers the reads queued, then stops the lanes.
func (r *readBarriers) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.queue.Close()
	r.stopped.Wait()
}

// wait returns at once when the last barrier covers a read of snap on
// server, else once a barrier sent after this call has committed on
// server, or with ctx's error when ctx ends first (the barrier, sent or
// not, is left to the lane).
func (r *readBarriers) wait(ctx context.Context, server string, snap snapshot) error {
	r.mu.Lock()
	covered := r.last.covers(server, snap)
	r.mu.Unlock()
	if covered {
		return nil
	}
	r.start()
	pr := &pendingRead{ctx: ctx, server: server, done: make(chan batching.Outcome[struct{}], 1)}
	if err := r.queue.Send(ctx, pr); err != nil {
		return err
	}
	_, err := batching.Await(ctx, pr.done)
	if err != nil && ctx.Err() != nil {
		pr.left.Store(true)
	}
	return err
}

// lane sends barriers until the queue is closed and drained: it takes
// every read queued, sends one barrier for them (as a commit: see
// commit.go), and answers them.
func (r *readBarriers) lane() {
	batch := make([]*pendingRead, 0, maxBarrierReads)
	for {
		first, ok := <-r.queue.Receive()
		if !ok {
			return
		}
		batch = r.fill(append(batch[:0], first))
		if len(batch) > 0 {
			r.run(batch)
		}
		clear(batch)
	}
}

// fill adds the reads queued by now to batch, without waiting, and drops
// those whose callers left.
func (r *readBarriers) fill(batch []*pendingRead) []*pendingRead {
	for len(batch) < maxBarrierReads {
		select {
		case pr, ok := <-r.queue.Receive():
			if !ok {
				return waiting(batch)
			}
			batch = append(batch, pr)
		default:
			return waiting(batch)
		}
	}
	return waiting(batch)
}

// waiting keeps the reads whose callers still wait.
func waiting(batch []*pendingRead) []*pendingRead {
	kept := batch[:0]
	for _, pr := range batch {
		if !pr.left.Load() {
			kept = append(kept, pr)
		}
	}
	clear(batch[len(kept):])
	return kept
}

// run sends one barrier for batch and answers its reads. It returns at
// the barrier's end or once every caller's deadline has passed: the
// barrier is then left to finish on its connection, as any commit whose
// callers left (see commit.go).
func (r *readBarriers) run(batch []*pendingRead) {
	last := time.Now().Add(r.s.callTimeout)
	for i, pr := range batch {
		if d, ok := pr.ctx.Deadline(); ok && (i == 0 || d.After(last)) {
			last = d
		}
	}
	// The first read's context lends the barrier its trace.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(batch[0].ctx), last)
	defer cancel()
	var server, snap, xid, lsn string
	err := r.s.commit(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		server = serverOf(conn)
		r.sent.Add(1)
		err := conn.QueryRow(ctx, readBarrierSQL).Scan(&snap, &xid, &lsn)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // no synchronous standby any more: it wrote nothing, and covers nothing
		}
		return err
	})
	if err == nil && snap != "" {
		r.cover(server, snap, xid)
	}
	for _, pr := range batch {
		err := err
		if err == nil && pr.server != server {
			err = fmt.Errorf("%w: read on %q, barrier on %q", errOtherServer, pr.server, server)
		}
		pr.done <- batching.Outcome[struct{}]{Err: err}
	}
}

// cover makes a barrier that committed the last one, when it is newer.
func (r *readBarriers) cover(server, snapText, xidText string) {
	snap, err := parseSnapshot(snapText)
	if err != nil {
		return // covers nothing: the reads it answered queued before it
	}
	xid, err := strconv.ParseUint(xidText, 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.server != server || snap.xmax >= r.last.snap.xmax {
		r.last = coverage{server: server, snap: snap, xid: xid}
	}
}

// read runs sql, a statement that only reads, on a pooled connection in
// ctx, has take read its result, and returns once the read can be
// answered: at once without synchronous standbys, else once a barrier sent
// after the read has committed. The connection is released before the
// wait: a read waiting for the standbys holds none.
func (s *Store) read(ctx context.Context, read func(pgx.BatchResults) error, sql string, args ...any) error {
	if s.stats.detached.Load() >= s.maxOrphaned {
		return errBacklog // the standbys stall: no barrier would be answered
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue(synchronousSQL)
	br := conn.Conn().SendBatch(ctx, b)
	var synchronous bool
	var snapText string
	err = read(br)
	if err == nil {
		err = br.QueryRow().Scan(&synchronous, &snapText)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	server := serverOf(conn.Conn())
	conn.Release()
	if err != nil || !synchronous {
		return err
	}
	snap, err := parseSnapshot(snapText)
	if err != nil {
		return err
	}
	return s.barriers.wait(ctx, server, snap)
}
