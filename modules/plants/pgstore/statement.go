package pgstore

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/changes"
)

// Every change of a plant is one statement that writes the plant, logs the
// change (plant_changes, migration 0004) and, with an outbox, writes its
// events: a data-modifying CTE per part, each selecting from the one
// before, so that all commit or none does, in one round trip. The log's
// version is drawn by nextval as the log's insert reads the written rows,
// that is after the plant's write: a create that waited for a concurrent
// delete of its id (ON CONFLICT waits, then inserts what it computed
// before the wait) draws its version after the delete drew its own, so of
// two changes of one plant the later always has the greater version.
//
// The log's tx, which orders the feed, is the greater of the transaction's
// id and the plant's previous change's tx, read from plant_heads by the
// upsert that records this change's: the upsert waits for a concurrent
// change of the plant and then sees what it committed (a query would read
// the statement's snapshot, taken before the wait). A transaction gets its
// id at its first write, which in a batched create can come before a wait
// for another transaction's change of one of its plants: without the
// plant's head, the later change would come first in the feed.
//
// The followers of every replica are woken by a notification on
// plantstore_changes (see ChangeLog.Wait), which the process sends once
// the change has committed, in a transaction of its own that waits for no
// flush (see notifySQL), rather than from the change's statement: a
// transaction that notifies takes a lock that PostgreSQL holds through its
// commit's WAL flush and its wait for the synchronous standbys, one lock
// for the whole cluster, so that changes notifying in their own statements
// would commit one at a time, never sharing a flush, and one waiting for a
// stalled standby would hold every other change behind it. A notification
// lost (the process dies between the commit and the notification) costs a
// follower its poll's delay.

// changeSQL is the statement of a change: cte writes the plants and names
// the written rows (id, name, tag) written; logged(plant_id, kind,
// version, at) is their log; hook, unless "", is a data-modifying
// statement reading them (the outbox's rows). It returns the changed ids
// with their versions and times (see queryCommitted); no row when nothing
// changed, and then it logs nothing.
func changeSQL(cte, written string, kind changes.Kind, hook string) string {
	sql := cte + `, head AS (INSERT INTO plant_heads (plant_id, tx)
SELECT id, pg_current_xact_id() FROM ` + written + `
ON CONFLICT (plant_id) DO UPDATE SET tx = greatest(plant_heads.tx, excluded.tx)
RETURNING plant_id, tx), logged AS (INSERT INTO plant_changes (tx, version, kind, plant_id, name, tag)
SELECT head.tx, nextval('plant_versions'), ` + strconv.Itoa(int(kind)) + `, id, name, tag FROM ` + written + ` JOIN head ON head.plant_id = id
RETURNING plant_id, kind, version, at)`
	if hook != "" {
		sql += `, hook AS (` + hook + `)`
	}
	return sql + `
SELECT plant_id, version, at FROM logged`
}

// changeStatement is a change other than a create: its CTE, which takes
// params parameters, and what it does.
type changeStatement struct {
	cte, written string
	kind         changes.Kind
	params       int
	plain        string // changeSQL without a hook
}

func newChangeStatement(cte, written string, kind changes.Kind, params int) *changeStatement {
	return &changeStatement{cte: cte, written: written, kind: kind, params: params, plain: changeSQL(cte, written, kind, "")}
}

// The conditional ones compare the stored row with the plant the caller
// read (see update.go). A replace writes only a new content: of one with
// the content stored, nothing is written, logged or announced.
var (
	replaceStatement = newChangeStatement(`WITH changed AS (UPDATE plants SET name = $2, tag = $3
WHERE id = $1 AND (name, tag) IS DISTINCT FROM ($2, $3) RETURNING id, name, tag)`, "changed", changes.Replaced, 3)
	replaceMatchingStatement = newChangeStatement(`WITH changed AS (UPDATE plants SET name = $2, tag = $3
WHERE id = $1 AND name = $4 AND tag IS NOT DISTINCT FROM $5 AND (name, tag) IS DISTINCT FROM ($2, $3) RETURNING id, name, tag)`, "changed", changes.Replaced, 5)
	deleteStatement = newChangeStatement(`WITH removed AS (DELETE FROM plants WHERE id = $1
RETURNING id, NULL::text AS name, NULL::text AS tag)`, "removed", changes.Deleted, 1)
	deleteMatchingStatement = newChangeStatement(`WITH removed AS (DELETE FROM plants WHERE id = $1 AND name = $2 AND tag IS NOT DISTINCT FROM $3
RETURNING id, NULL::text AS name, NULL::text AS tag)`, "removed", changes.Deleted, 3)
)

// writeHook is what the store writes with every change, in the change's
// own statement, so that both commit or neither does, and a change still
// costs one round trip: the outbox's rows (see Outbox.OnChange). A store
// has one hook, for creates, replaces and deletes alike.
type writeHook interface {
	// sql is a data-modifying statement (an INSERT ... SELECT, say) with
	// its placeholders from $first, run as the statement's last part (see
	// changeSQL): it finds the changed plants' versions and times in
	// logged, and on a create the inserted plants in created(id, name,
	// tag), never an identical re-create or a conflict.
	sql(first int) string
	// args gives its values for the changes the statement may make (nil:
	// write nothing, run the change alone), and done, unless nil, is told
	// how the statement ended: the ids it changed, or an error, after
	// which it may or may not have committed. A shared create statement
	// that fails, for a row of the hook's, say, is run again one create at
	// a time (each asked anew), so that only the one at fault fails.
	args(cs []changes.Change) (args []any, done func(committed map[int64]changes.Committed, err error))
}

// setHook sets the store's hook. Call it before the first write (before
// Start): the writers read it without a lock.
func (s *Store) setHook(h writeHook) {
	s.hooked = make(map[*changeStatement]string)
	for _, st := range []*changeStatement{createStatement, replaceStatement, replaceMatchingStatement, deleteStatement, deleteMatchingStatement} {
		s.hooked[st] = changeSQL(st.cte, st.written, st.kind, h.sql(st.params+1))
	}
	s.hook = h
}

// change runs st on conn with its args, with the hook's writes for
// changes, and returns what it committed (nothing when it changed
// nothing). It runs inside a commit (see commit.go) or a create lane's
// check, whose check of the canceled wait's warning counts it; the hook
// hears the same outcome.
func (s *Store) change(ctx context.Context, conn *pgx.Conn, st *changeStatement, args []any, cs []changes.Change) (map[int64]changes.Committed, error) {
	sql := st.plain
	var done func(map[int64]changes.Committed, error)
	if s.hook != nil {
		var hookArgs []any
		if hookArgs, done = s.hook.args(cs); hookArgs != nil {
			sql, args = s.hooked[st], append(args, hookArgs...)
		}
	}
	var committed map[int64]changes.Committed
	err := replicated(conn, func(conn *pgx.Conn) (err error) {
		committed, err = queryCommitted(ctx, conn, sql, args, len(cs))
		return err
	})
	if err != nil {
		committed = nil
	}
	if len(committed) > 0 {
		s.announce()
	}
	if done != nil {
		done(committed, err)
	}
	return committed, err
}

// notifySQL notifies the followers of every replica that a change
// committed, in a transaction that waits for no WAL flush (the
// notification needs none) and so holds the notification lock for no
// longer than writing its commit record.
const notifySQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify('` + notifyChannel + `', '')`

// announce wakes this process's waiters at a change it committed, and has
// the notifier (see Start) tell the other replicas'.
func (s *Store) announce() {
	s.changed.Wake()
	select {
	case s.notifyPending <- struct{}{}:
	default: // one is pending already: it covers this change too
	}
}

// notifyGather is how long a notification waits for more changes to
// announce: a notification is a statement and a commit of its own, which
// one client's creates in a row would otherwise pay once each, and a
// follower on another replica hears of a change that much later at most.
const notifyGather = 5 * time.Millisecond

// notify sends a notification for the changes committed since the last
// one, one at a time: changes committed while one gathers or is sent share
// it or the next.
func (s *Store) notify(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.notifyPending:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyGather):
		}
		select {
		case <-s.notifyPending: // committed while this one gathered: it announces it
		default:
		}
		sctx, cancel := context.WithTimeout(ctx, s.callTimeout)
		_, _ = s.pool.Exec(sctx, notifySQL) // lost: the followers' polls cover it
		cancel()
	}
}
