package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plantstore/plantstore/internal/batching"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Concurrent creates share a statement, and so a commit and its WAL flush:
// the store's creates run on two lanes that take turns. A create that
// finds no statement running runs at once, alone; one that comes while a
// statement runs queues, and when that statement ends the next lane takes
// everything queued in one statement. Under load a plant then costs the
// database a row of a statement rather than a statement, a transaction
// and a flush of its own, which is what a single-row INSERT per create
// would cost (pgbench's figure). Every caller returns once the statement
// holding its plant has committed.

// maxBatchRows bounds one statement: past a few hundred rows a batch saves
// nothing more, and a bound keeps a statement's callers' wait short.
const maxBatchRows = 256

// createLanes is how many create lanes there are: two, so that the next
// statement is gathered, with its connection in hand, while one runs, and
// starts the moment it ends. They take turns (see batcher.turn): one
// statement runs at a time while statements are quick (see takeTurn). A
// statement and its commit cost the database far more than a row of it
// (measured with pgbench on the create statement: see
// docs/performance.md), so creates that arrive while one runs cost least
// in the next. Lanes running freely put fewer rows in a statement the
// more there are (measured at 32 clients: 2 lanes 7, 4 lanes 4, 8 lanes
// 2). The other connections of the pool serve reads, deletes and
// readiness.
func createLanes(maxConns int) int { return min(2, maxConns) }

// insertCTE is createSQL for many rows, as the first part of the create
// statement (see changeSQL), which logs each row it stored and returns
// their ids, with the versions and times their changes were given. The
// other ids were taken, and storedSQL reads what is stored under them to
// tell an identical plant (Unchanged) from a different one (a conflict),
// durably as durableGetSQL does, its row locks in id order.
const (
	insertCTE = `WITH created AS (INSERT INTO plants (id, name, tag)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
ON CONFLICT (id) DO NOTHING
RETURNING id, name, tag)`
	storedSQL = `SELECT id, name, tag FROM plants WHERE id = ANY($1) ORDER BY id FOR KEY SHARE`
)

// createStatement is the create: one statement for one create or many;
// batchSQL is it without the hook's writes.
var (
	createStatement = newChangeStatement(insertCTE, "created", changes.Created, 3)
	batchSQL        = createStatement.plain
)

type pendingCreate struct {
	ctx   context.Context
	p     plant.Plant
	done  chan createOutcome // buffered: a lane never blocks on a caller
	watch watch              // queued, then claimed by a lane or abandoned by its caller
}

// createOutcome is what a create's caller is told.
type createOutcome = batching.Outcome[plant.CreateResult]

type batcher struct {
	s     *Store
	queue *batching.Queue[*pendingCreate]
	// turn is held by the lane whose statement runs (until it ends or its
	// callers have all left it: see runUntilDeadlines). A lane with
	// creates to run waits for it, within bounds (see takeTurn).
	turn    chan struct{}
	stopped sync.WaitGroup
	lanes   int
	started atomic.Bool // the lanes were spawned, or close ran first: see start (lifecycle.go)
}

// newBatcher builds a batcher of lanes lanes; they start with start.
func newBatcher(s *Store, lanes int) *batcher {
	return &batcher{s: s, queue: batching.NewQueue[*pendingCreate](maxBatchRows), turn: make(chan struct{}, 1), lanes: lanes}
}

// takeTurn waits for no other lane's statement to be running, and reports
// whether it took the turn (to give back with endTurn). A queue holding a
// full statement's creates does not wait: they would only wait behind
// another full statement. Nor does a lane wait past turnWait: a statement
// that runs longer waits for something other than the database's own work
// (a core on a busy machine, a row lock, a stalled standby), and the
// creates behind it run beside it, as they would on a lane of their own.
func (b *batcher) takeTurn(held int) bool {
	if held+b.queue.Len() >= maxBatchRows {
		return false
	}
	select {
	case b.turn <- struct{}{}:
		return true
	default:
	}
	wait := time.NewTimer(turnWait)
	defer wait.Stop()
	select {
	case b.turn <- struct{}{}:
		return true
	case <-wait.C:
		return false
	}
}

// turnWait bounds a lane's wait for its turn: about what a statement of a
// few creates takes to run and commit when the database has its cores to
// itself. Measured on a machine busy with other work (docs/performance.md,
// "The batch shape"), waits of up to 20 ms lost more of the machine's
// cores than the larger statements saved; 2 ms did not.
const turnWait = 2 * time.Millisecond

// endTurn lets the next lane start its statement.
func (b *batcher) endTurn(taken bool) {
	if taken {
		<-b.turn
	}
}

// create queues p and returns its outcome once its statement has run.
// When ctx ends first it returns an unavailable error: a create still
// queued leaves the queue and is never run; one whose statement runs
// already may or may not be stored (its statement is left to finish, see
// commit.go), and an identical retry settles it.
func (b *batcher) create(ctx context.Context, p plant.Plant) (plant.CreateResult, error) {
	if !b.started.Load() {
		return 0, errNotStarted
	}
	pc := &pendingCreate{ctx: ctx, p: p, done: make(chan createOutcome, 1)}
	pc.watch.state.Store(queued)
	if err := b.queue.Send(ctx, pc); err != nil {
		if errors.Is(err, batching.ErrClosed) {
			return 0, err
		}
		return 0, failed("create", err)
	}
	select {
	case o := <-pc.done:
		return o.Value, o.Err
	case <-ctx.Done():
	}
	if pc.watch.state.CompareAndSwap(queued, abandoned) {
		return 0, failed("create", fmt.Errorf("queued for a create lane: %w", ctx.Err()))
	}
	if !pc.watch.orphan(b.s) {
		o := <-pc.done // answered meanwhile: the outcome is known
		return o.Value, o.Err
	}
	return 0, failed("create", ctx.Err())
}

// claim takes pc for a statement, unless its caller has left.
func (pc *pendingCreate) claim() bool { return pc.watch.state.CompareAndSwap(queued, running) }

// answer tells pc's caller the outcome of its create.
func (pc *pendingCreate) answer(s *Store, result plant.CreateResult, err error) {
	pc.done <- createOutcome{Value: result, Err: err}
	pc.watch.finish(s)
}

// close runs the creates already queued, then stops the lanes.
func (b *batcher) close() {
	b.started.Store(true) // no lane can be spawned after this, while Wait runs
	b.queue.Close()
	b.stopped.Wait()
}

// lane runs statements until the queue is closed and empty. It takes its
// turn and a connection first and then the creates queued by then, so
// that a create whose caller left while the lane waited is not run. A statement
// that outlives the deadlines of all its callers (its commit waits for a
// stalled standby, or its connection went silent) is left to finish on its
// connection, and the lane goes on with another, as long as half the pool
// is not held by such statements (see commit.go).
func (b *batcher) lane() {
	batch := make([]*pendingCreate, 0, maxBatchRows)
	var next []*pendingCreate // creates held over: their id was in the batch already
	for {
		if len(next) == 0 {
			first, ok := <-b.queue.Receive()
			if !ok {
				return
			}
			next = append(next, first)
		}
		turn := b.takeTurn(len(next))
		var conn *pgxpool.Conn
		err := errBacklog
		if b.s.stats.detached.Load() < b.s.maxOrphaned {
			conn, err = b.s.acquire(next[0].ctx)
		}
		batch, next = b.fill(batch[:0], next)
		switch {
		case len(batch) == 0: // every caller left
		case err != nil:
			for _, pc := range batch {
				pc.answer(b.s, 0, failed("create", err))
			}
		default:
			b.runUntilDeadlines(conn, slices.Clone(batch))
			conn = nil // released by the statement's goroutine
		}
		if conn != nil {
			conn.Release()
		}
		b.endTurn(turn)
		clear(batch)
	}
}

// fill makes a batch of held-over and queued creates, without waiting. A
// statement may hold an id once only (ON CONFLICT cannot touch a row
// twice), so a second create of an id is held over for the next one.
func (b *batcher) fill(batch, held []*pendingCreate) (_, rest []*pendingCreate) {
	ids := make(map[int64]struct{}, len(held))
	add := func(pc *pendingCreate) {
		if _, dup := ids[pc.p.ID]; dup {
			rest = append(rest, pc)
			return
		}
		if !pc.claim() {
			return // its caller left: it is not run
		}
		ids[pc.p.ID] = struct{}{}
		batch = append(batch, pc)
	}
	for _, pc := range held {
		add(pc)
	}
	for len(batch) < maxBatchRows {
		select {
		case pc, ok := <-b.queue.Receive():
			if !ok {
				return batch, rest
			}
			add(pc)
		default:
			return batch, rest
		}
	}
	return batch, rest
}

// runUntilDeadlines runs batch on conn, and returns when it is done or
// when every caller's deadline has passed: then the statement keeps conn
// until it ends, counted as detached.
func (b *batcher) runUntilDeadlines(conn *pgxpool.Conn, batch []*pendingCreate) {
	last := time.Now().Add(b.s.callTimeout) // before run, which sorts batch
	for i, pc := range batch {
		if d, ok := pc.ctx.Deadline(); ok && (i == 0 || d.After(last)) {
			last = d
		}
	}
	var w watch
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.run(conn.Conn(), batch)
		conn.Release()
		if !w.state.CompareAndSwap(running, finished) {
			b.s.stats.detached.Add(-1)
		}
	}()
	timer := time.NewTimer(time.Until(last))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		if w.state.CompareAndSwap(running, orphaned) {
			b.s.stats.detached.Add(1)
		}
	}
}

// run stores batch in one statement on conn and answers every caller. The
// statements run in a context of their own (see commit.go): no caller's
// deadline may stop a statement that may commit.
func (b *batcher) run(conn *pgx.Conn, batch []*pendingCreate) {
	if len(batch) == 1 { // alone: the single-row statement
		pc := batch[0]
		ctx, cancel := b.s.commitContext(pc.ctx)
		defer cancel()
		result, err := b.s.createOne(ctx, conn, pc.p)
		pc.answer(b.s, result, err)
		return
	}
	// In id order, every statement takes its row locks in one order, so
	// two statements sharing ids (two lanes, two replicas) wait for each
	// other instead of deadlocking.
	slices.SortStableFunc(batch, func(a, b *pendingCreate) int { return cmp.Compare(a.p.ID, b.p.ID) })
	// The first caller's context lends the statement its trace.
	ctx, cancel := b.s.commitContext(batch[0].ctx)
	defer cancel()
	created, err := b.s.insertBatch(ctx, conn, batch)
	if err != nil && !unavailable(err) {
		// The statement failed whole, for a reason in its rows (or its
		// hook's): run each create alone, so that only the one at fault
		// fails.
		for _, pc := range batch {
			result, err := b.s.createOne(ctx, conn, pc.p)
			pc.answer(b.s, result, err)
		}
		return
	}
	var stored map[int64]plant.Plant
	if err == nil && len(created) < len(batch) {
		stored, err = b.s.readStored(ctx, conn, batch, created)
	}
	for _, pc := range batch {
		if _, ok := created[pc.p.ID]; ok { // committed, even if the read failed
			pc.answer(b.s, plant.Created, nil)
			continue
		}
		if err != nil {
			pc.answer(b.s, 0, failed("create", err))
			continue
		}
		switch old, ok := stored[pc.p.ID]; {
		case !ok: // deleted since the insert: the id is free again
			result, err := b.s.createOne(ctx, conn, pc.p)
			pc.answer(b.s, result, err)
		case old.Equal(pc.p):
			pc.answer(b.s, plant.Unchanged, nil)
		default:
			pc.answer(b.s, 0, plant.ErrConflict)
		}
	}
}

// insertBatch inserts the batch's plants whose id is free, in one
// statement on conn, and returns their ids.
func (s *Store) insertBatch(ctx context.Context, conn *pgx.Conn, batch []*pendingCreate) (map[int64]changes.Committed, error) {
	creating := make([]changes.Change, len(batch))
	for i, pc := range batch {
		creating[i] = changes.Change{Ctx: pc.ctx, Kind: changes.Created, After: pc.p}
	}
	return s.insert(ctx, conn, creating)
}

// insert inserts the plants created (Created changes) whose id is free,
// each logged as a change, with the hook's writes, in one statement on
// conn, and returns their ids with what their commit gave them. On an
// error the ids read so far say nothing: the statement's end (its commit)
// was not seen, or its commit's wait for replication was canceled.
func (s *Store) insert(ctx context.Context, conn *pgx.Conn, creating []changes.Change) (map[int64]changes.Committed, error) {
	ids := make([]int64, len(creating))
	names := make([]string, len(creating))
	tags := make([]*string, len(creating))
	for i, c := range creating {
		ids[i], names[i], tags[i] = c.After.ID, c.After.Name, c.After.Tag
	}
	// Unlike the other changes, a create runs outside commit (a lane holds
	// its connection), so it counts a canceled wait for replication itself.
	var created map[int64]changes.Committed
	err := s.checked(conn, func(conn *pgx.Conn) (err error) {
		created, err = s.change(ctx, conn, createStatement, []any{ids, names, tags}, creating)
		return err
	})
	return created, err
}

// queryCommitted runs a change statement (see changeSQL) and collects what
// it returns: the changed plants' ids, with their versions and times.
func queryCommitted(ctx context.Context, conn *pgx.Conn, sql string, args []any, n int) (map[int64]changes.Committed, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	committed := make(map[int64]changes.Committed, n)
	var id int64
	var c changes.Committed
	if _, err := pgx.ForEachRow(rows, []any{&id, &c.Version, &c.At}, func() error {
		committed[id] = c
		return nil
	}); err != nil {
		return nil, err
	}
	return committed, nil
}

// readStored reads, durably (see storedSQL), the plants stored under the
// batch's ids it did not create.
func (s *Store) readStored(ctx context.Context, conn *pgx.Conn, batch []*pendingCreate, created map[int64]changes.Committed) (map[int64]plant.Plant, error) {
	taken := make([]int64, 0, len(batch)-len(created))
	for _, pc := range batch {
		if _, ok := created[pc.p.ID]; !ok {
			taken = append(taken, pc.p.ID)
		}
	}
	stored := make(map[int64]plant.Plant, len(taken))
	err := s.checked(conn, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, storedSQL, taken)
		if err != nil {
			return err
		}
		var p plant.Plant
		_, err = pgx.ForEachRow(rows, []any{&p.ID, &p.Name, &p.Tag}, func() error {
			stored[p.ID] = p
			p.Tag = nil // the next row's tag gets a pointer of its own
			return nil
		})
		return err
	})
	return stored, err
}
