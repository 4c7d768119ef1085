package pgstore

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A commit that waits for a synchronous standby is not visible to anyone
// yet. Canceling that wait (a cancel request, an operator's
// pg_cancel_backend or pg_terminate_backend) does not undo the commit: the
// row becomes visible on the primary alone, and a failover to the standby
// loses it. So the store never cancels a statement that may commit, and
// treats a commit whose wait was canceled by anyone else as unknown (see
// docs/reliability.md, "Replication"):
//
//   - its connections cannot send a cancel request at all (noCancel), so
//     neither a caller's deadline nor pgx closing a broken connection can
//     cut a commit's wait short;
//   - a statement that may commit runs on a context of its own (commit):
//     the caller's deadline answers the caller, unavailable, and leaves the
//     statement to finish; only the much longer CommitTimeout closes its
//     socket, which the server does not notice while it waits;
//   - the server's warning that a wait was canceled ("the transaction has
//     already committed locally, but might not have been replicated") is
//     noted on the connection (onNotice) and turns the statement's outcome
//     into errUnreplicated, unavailable, never a success.

// errUnreplicated is the outcome of a statement whose commit's wait for
// the standbys was canceled: it committed on the primary, and may be lost
// with it.
var errUnreplicated = errors.New("the commit's wait for replication was canceled: committed on the primary only, possibly lost on failover")

// errBacklog refuses a write while half the pool holds commits whose
// callers left (waiting for a stalled standby, most likely): the other
// half serves reads and the readiness check.
var errBacklog = errors.New("too many commits wait for replication")

// errCancelRefused answers pgx's attempt to open a connection for a cancel
// request (see noCancel).
var errCancelRefused = errors.New("plantstore sends no cancel requests")

// warnedKey is the key of a connection's CustomData that onNotice sets.
const warnedKey = "plantstore.warned"

// onNotice notes a warning on its connection. The canceled wait's warning
// carries SQLSTATE 01000 (a plain warning; 57P01 when the backend is
// terminated, though that one ends the connection too); its text is
// translated with the server's lc_messages, so the code is what can be
// relied on. None of the store's statements warns otherwise, and taking
// any such warning for a canceled wait only ever turns a success into a
// 503.
func onNotice(c *pgconn.PgConn, n *pgconn.Notice) {
	if n.SeverityUnlocalized == "WARNING" && (n.Code == "01000" || n.Code == "57P01") {
		c.CustomData()[warnedKey] = true
	}
}

// noCancel makes each connection of the pool unable to send a cancel
// request: pgx sends one when a caller's context ends under a
// CancelRequestContextWatcherHandler, and also whenever it closes a
// connection whose read failed (a deadline, a broken socket). A cancel
// request is a new connection through the configuration's DialFunc to the
// server of an established connection, so each connection gets a DialFunc
// of its own that refuses to dial once the connection is established.
// Its context watcher ends a statement by the socket only (closeWatch).
func noCancel(closing context.Context) func(context.Context, *pgx.ConnConfig) error {
	return func(_ context.Context, cc *pgx.ConnConfig) error {
		dial := cc.DialFunc
		var established atomic.Bool
		cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if established.Load() {
				return nil, errCancelRefused
			}
			return dial(ctx, network, addr)
		}
		after := cc.AfterConnect
		cc.AfterConnect = func(ctx context.Context, c *pgconn.PgConn) error {
			established.Store(true)
			if after != nil {
				return after(ctx, c)
			}
			return nil
		}
		cc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &closeWatch{conn: c.Conn(), closing: closing}
		}
		return nil
	}
}

// closeWatch ends a statement whose context ended through its socket:
// a deadline in the past, after which pgx closes the connection. Once the
// store is closing it closes the socket outright: pgx would otherwise read
// on from a server that sends nothing while a commit waits for a standby,
// for up to 15 s per connection, before closing it.
type closeWatch struct {
	conn    net.Conn
	closing context.Context
}

func (w *closeWatch) HandleCancel(context.Context) {
	if w.closing.Err() != nil {
		_ = w.conn.Close() // the connection is being given up; its error is news to nobody
		return
	}
	_ = w.conn.SetDeadline(time.Now()) // fails only on a closed socket, which fails the read too
}

func (w *closeWatch) HandleUnwatchAfterCancel() { _ = w.conn.SetDeadline(time.Time{}) }

// commitStats count what operators watch of commits and replication (see
// Stats).
type commitStats struct {
	orphaned     atomic.Int64 // in flight, their callers answered already
	detached     atomic.Int64 // connections held by statements no caller waits for
	outlived     atomic.Int64 // ever outlived their caller
	unreplicated atomic.Int64 // came back with the canceled wait's warning
}

// Stats is what the store tells about commits waiting on replication, and
// about the change log's listener.
type Stats struct {
	// OrphanedCommits are statements that may commit, in flight now, whose
	// callers stopped waiting (answered 503): with a synchronous standby,
	// commits waiting for it.
	OrphanedCommits int64
	// OutlivedCommits counts the statements that ever outlived their
	// caller's deadline.
	OutlivedCommits int64
	// UnreplicatedCommits counts the statements whose commit came back
	// with the canceled wait's warning: answered 503 as unknown, committed
	// on the primary only.
	UnreplicatedCommits int64
	// ChangeListens counts the connections the change log's listener made
	// and ran LISTEN on: one after Start, one more each time it connected
	// again after losing its connection. While it has none, another
	// replica's changes reach this replica's waiting feed followers only
	// at their next look, within a second, rather than at once.
	ChangeListens int64
}

// Stats returns the store's commit and listener figures.
func (s *Store) Stats() Stats {
	return Stats{
		OrphanedCommits:     s.stats.orphaned.Load(),
		OutlivedCommits:     s.stats.outlived.Load(),
		UnreplicatedCommits: s.stats.unreplicated.Load(),
		ChangeListens:       s.background.listens.Load(),
	}
}

// checked runs fn, statements that may commit, on conn, and fails it with
// errUnreplicated if the server warned that a commit's wait was canceled.
func (s *Store) checked(conn *pgx.Conn, fn func(*pgx.Conn) error) error {
	err := replicated(conn, fn)
	if errors.Is(err, errUnreplicated) {
		s.stats.unreplicated.Add(1)
	}
	return err
}

// replicated runs fn, statements that may commit, on conn, a connection of
// the store's pool, and fails with an unavailable error if the server
// warned that a commit's wait for replication was canceled: what fn read
// or wrote may then be on the primary only. The outbox checks its claims
// with it (Outbox.Claim), so that no event is sent on the word of a commit
// a failover may lose.
func replicated(conn *pgx.Conn, fn func(*pgx.Conn) error) error {
	data := conn.PgConn().CustomData()
	delete(data, warnedKey)
	err := fn(conn)
	if data[warnedKey] != nil {
		delete(data, warnedKey)
		return failed("commit", errors.Join(errUnreplicated, err))
	}
	return err
}

// commitContext is the context a statement that may commit runs in: the
// caller's values (its trace), no cancellation, and CommitTimeout.
// Close ends it early (see Store.Close).
func (s *Store) commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.commitTimeout)
	stop := context.AfterFunc(s.closing, cancel)
	return cctx, func() { stop(); cancel() }
}

// commit runs fn, statements that may commit, on a pooled connection. The
// connection is acquired in ctx; fn runs in a context of its own (see
// commitContext) and is left to finish when ctx ends first, in which case
// commit returns ctx's error: the caller does not know whether fn
// committed. fn's results are the caller's only when commit returns nil or
// fn's own error. The caller wraps the error (failed).
func (s *Store) commit(ctx context.Context, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	if s.stats.detached.Load() >= s.maxOrphaned {
		return errBacklog
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	var w watch
	go func() {
		defer conn.Release()
		cctx, cancel := s.commitContext(ctx)
		defer cancel()
		done <- s.checked(conn.Conn(), func(c *pgx.Conn) error { return fn(cctx, c) })
		if w.finish(s) {
			s.stats.detached.Add(-1)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if !w.orphan(s) {
			return <-done // it finished meanwhile: the outcome is known
		}
		s.stats.detached.Add(1)
		return ctx.Err()
	}
}

// watch is a statement that may outlive its caller: whichever of its end
// and its caller's deadline comes first decides who hears of it.
type watch struct{ state atomic.Int32 }

// A watch's states. A queued create starts queued, and its lane claims it
// (running) unless its caller left first (abandoned): then it never runs.
const (
	running int32 = iota
	finished
	orphaned
	queued
	abandoned
)

// finish marks the statement's end, after its outcome is sent, and
// reports whether its caller had left.
func (w *watch) finish(s *Store) bool {
	if !w.state.CompareAndSwap(running, finished) {
		s.stats.orphaned.Add(-1)
		return true
	}
	return false
}

// orphan marks the caller's leaving, and reports whether it came before the
// statement's end: then the statement is counted as outliving its caller.
func (w *watch) orphan(s *Store) bool {
	if !w.state.CompareAndSwap(running, orphaned) {
		return false
	}
	s.stats.outlived.Add(1)
	s.stats.orphaned.Add(1)
	return true
}

// acquire takes a pooled connection for a create lane.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.callTimeout)
	defer cancel()
	return s.pool.Acquire(ctx)
}

// defaultCommitTimeout bounds how long a statement that may commit keeps
// its connection after its caller has been answered: a commit waiting for
// a stalled standby holds a connection of the pool until then. The
// connection is closed, never canceled: the server goes on waiting.
const defaultCommitTimeout = time.Minute
