package pgstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// Outbox is the webhook outbox in the plants database (migration 0003),
// shared by every replica (outbox.Store). A claim takes due rows with FOR
// UPDATE SKIP LOCKED, so replicas claiming at once take different rows, and
// pushes their next_attempt_at past the lease: that column is both the
// schedule and the lease, so a killed replica's rows fall due again by
// themselves. Every time is the database's, so replicas' clocks do not
// matter.
type Outbox struct {
	store *Store
}

// Outbox returns the store's outbox.
func (s *Store) Outbox() *Outbox { return &Outbox{store: s} }

// pgWriteSQL is the outbox's part of a change statement (see changeSQL),
// its placeholders from $first: the plan's rows of the plants the
// statement changed, found in logged(plant_id, kind, version, at), with
// their change's kind, version and time. A leased row is written as its
// writer's claim, attempt 1 until $first+6 seconds from now.
func pgWriteSQL(first int) string {
	p := func(i int) string { return "$" + strconv.Itoa(first+i) }
	return `INSERT INTO webhook_deliveries (id, endpoint, body, traceparent, attempts, next_attempt_at, created_at, kind, version)
SELECT e.id, e.endpoint, e.body, e.traceparent, e.leased::int,
       CASE WHEN e.leased THEN now() + make_interval(secs => ` + p(6) + `) ELSE now() END, logged.at, logged.kind, logged.version
FROM unnest(` + p(0) + `::bigint[], ` + p(1) + `::text[], ` + p(2) + `::text[], ` + p(3) + `::bytea[], ` + p(4) + `::text[], ` + p(5) + `::bool[])
     AS e(plant, id, endpoint, body, traceparent, leased)
JOIN logged ON logged.plant_id = e.plant`
}

// maxReplay bounds one Replay.
const maxReplay = 10_000

const (
	pgClaimSQL = `UPDATE webhook_deliveries d
SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $3)
FROM (SELECT id FROM webhook_deliveries
      WHERE endpoint = $1 AND dead_at IS NULL AND delivered_at IS NULL AND next_attempt_at <= now()
      ORDER BY next_attempt_at LIMIT $2
      FOR UPDATE SKIP LOCKED) due
WHERE d.id = due.id
RETURNING d.id, d.body, d.traceparent, d.created_at, d.attempts, d.kind, d.version`
	// pgDeliveredSQL joins the ids rather than testing "id = ANY($1)":
	// with that, the generic plan of a prepared statement ANDs the primary
	// key with the whole partial due index (whose predicate matches),
	// reading every pending row's entry to settle a few. A delivered row is
	// kept, for a replay, until Prune removes it.
	pgDeliveredSQL = `UPDATE webhook_deliveries d SET delivered_at = now() FROM unnest($1::text[]) AS u(id)
WHERE d.id = u.id AND d.dead_at IS NULL AND d.delivered_at IS NULL`
	// pgDeliveredRecordSQL is pgDeliveredSQL with the attempts that
	// delivered, on record in the same statement.
	pgDeliveredRecordSQL = `WITH settled AS (
  UPDATE webhook_deliveries d SET delivered_at = now() FROM unnest($1::text[]) AS u(id)
  WHERE d.id = u.id AND d.dead_at IS NULL AND d.delivered_at IS NULL
)
INSERT INTO webhook_attempts (message, endpoint, number, at, status, error, latency_us, answer)
SELECT * FROM unnest($2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[], $7::text[], $8::bigint[], $9::text[])`
	pgRetrySQL = `UPDATE webhook_deliveries
SET next_attempt_at = now() + make_interval(secs => $3), last_error = $4
WHERE id = $1 AND attempts = $2 AND dead_at IS NULL AND delivered_at IS NULL`
	pgBurySQL = `UPDATE webhook_deliveries SET dead_at = now(), last_error = $3
WHERE id = $1 AND attempts = $2 AND dead_at IS NULL AND delivered_at IS NULL`
	// pgRetryRecordSQL and pgBuryRecordSQL are pgRetrySQL and pgBurySQL
	// with the attempt on record in the same statement; a sender whose
	// lease passed changes no state, but its attempt was made, and is
	// recorded.
	pgRetryRecordSQL = `WITH retried AS (` + pgRetrySQL + `)
INSERT INTO webhook_attempts (message, endpoint, number, at, status, error, latency_us, answer)
VALUES ($1, $5, $2, $6, $7, $8, $9, $10)`
	pgBuryRecordSQL = `WITH buried AS (` + pgBurySQL + `)
INSERT INTO webhook_attempts (message, endpoint, number, at, status, error, latency_us, answer)
VALUES ($1, $4, $2, $5, $6, $7, $8, $9)`
	pgDeadSQL = `SELECT id, endpoint, kind, version, body, created_at, dead_at, attempts, last_error FROM webhook_deliveries
WHERE dead_at IS NOT NULL AND ($1 = '' OR endpoint = $1) ORDER BY dead_at, id LIMIT $2`
	// pgRedeliverSQL redelivers the dead letter $1 if its endpoint is one
	// of $2, in one statement; it returns the letter's endpoint and
	// whether it was redelivered, and no row when there is no such letter.
	pgRedeliverSQL = `WITH dead AS (
  SELECT id, endpoint FROM webhook_deliveries WHERE id = $1 AND dead_at IS NOT NULL FOR UPDATE
), redelivered AS (
  UPDATE webhook_deliveries d SET dead_at = NULL, attempts = 0, next_attempt_at = now(), last_error = ''
  FROM dead WHERE d.id = dead.id AND dead.endpoint = ANY($2) RETURNING d.id
)
SELECT dead.endpoint, EXISTS (SELECT 1 FROM redelivered) FROM dead`
	pgDropSQL = `DELETE FROM webhook_deliveries WHERE dead_at IS NULL AND delivered_at IS NULL AND NOT (endpoint = ANY($1)) RETURNING endpoint`
	// pgStatsSQL counts the pending rows and the dead letters apart, each
	// through its partial index (the due index, webhook_deliveries_dead):
	// the table also keeps every delivered event of the retention window,
	// which a single pass would read all of.
	pgStatsSQL = `SELECT endpoint, sum(pending)::bigint, sum(dead)::bigint, min(oldest) FROM (
  SELECT endpoint, count(*) AS pending, 0 AS dead, min(created_at) AS oldest
  FROM webhook_deliveries WHERE dead_at IS NULL AND delivered_at IS NULL GROUP BY endpoint
  UNION ALL
  SELECT endpoint, 0, count(*), NULL FROM webhook_deliveries WHERE dead_at IS NOT NULL GROUP BY endpoint
) s GROUP BY endpoint`
	// pgReplaySQL makes at most $3 of endpoint $1's delivered rows
	// committed at or after $2 due again, the oldest first, and counts them.
	pgReplaySQL = `WITH chosen AS (
  SELECT id FROM webhook_deliveries WHERE endpoint = $1 AND delivered_at IS NOT NULL AND created_at >= $2
  ORDER BY created_at, version LIMIT $3 FOR UPDATE
), replayed AS (
  UPDATE webhook_deliveries d SET delivered_at = NULL, attempts = 0, next_attempt_at = now(), last_error = ''
  FROM chosen WHERE d.id = chosen.id AND d.delivered_at IS NOT NULL RETURNING d.id
)
SELECT count(*) FROM replayed`
	// pgPruneSQL removes at most $2 delivered rows committed before $1.
	pgPruneSQL = `DELETE FROM webhook_deliveries WHERE id IN (
  SELECT id FROM webhook_deliveries WHERE delivered_at IS NOT NULL AND created_at < $1 LIMIT $2
)`
	// pgPruneAttemptsSQL removes at most $2 attempts made before $1.
	pgPruneAttemptsSQL = `DELETE FROM webhook_attempts WHERE seq IN (
  SELECT seq FROM webhook_attempts WHERE at < $1 LIMIT $2
)`
)

// OnChange implements outbox.Store: the store's hook (outboxHook) writes,
// in the statement that changes plants (see statement.go), the rows plan
// gives for them, so that a change is never committed without its events,
// nor an event without its change. A row whose change the statement did
// not commit (an identical re-create or replace, a conflict, a missing
// plant) is not written. A leased row is written already claimed by its
// writer, for lease, which then attempts it without a claim of its own: a
// round trip and a row version fewer per event. plan's written, unless
// nil, is told how the statement ended, with each changed plant's version
// and time.
func (o *Outbox) OnChange(lease time.Duration, plan outbox.Planner) {
	o.store.setHook(outboxHook{plan: plan, lease: lease})
}

// outboxHook is the store's writeHook with an outbox: the plan's rows.
type outboxHook struct {
	plan  outbox.Planner
	lease time.Duration
}

func (h outboxHook) sql(first int) string { return pgWriteSQL(first) }

func (h outboxHook) args(cs []changes.Change) ([]any, func(map[int64]changes.Committed, error)) {
	rows, written := h.plan.Plan(cs, true)
	if len(rows) == 0 {
		return nil, written
	}
	n := len(rows)
	plants, ids, endpoints := make([]int64, n), make([]string, n), make([]string, n)
	bodies, parents, leased := make([][]byte, n), make([]string, n), make([]bool, n)
	for i, r := range rows {
		plants[i], ids[i], endpoints[i] = r.Plant, r.ID, r.Endpoint
		bodies[i], parents[i], leased[i] = r.Event.Body, r.Event.TraceParent, r.Leased
	}
	return []any{plants, ids, endpoints, bodies, parents, leased, h.lease.Seconds()}, written
}

// Claim implements outbox.Outbox. The claim commits (it moves the rows' lease),
// and that commit waits for the synchronous standbys up to a point past
// the claimed rows' own commit: a claim that returns normally hands out
// only events as durable as their plants. One whose wait was canceled
// (replicated) hands out nothing; its rows fall due again when the
// lease passes.
func (o *Outbox) Claim(ctx context.Context, endpoint string, max int, lease time.Duration) ([]outbox.Delivery, error) {
	if max <= 0 {
		return nil, nil
	}
	conn, err := o.store.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	var out []outbox.Delivery
	err = replicated(conn.Conn(), func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, pgClaimSQL, endpoint, max, lease.Seconds())
		if err != nil {
			return err
		}
		var d outbox.Delivery
		var kind int16
		_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.Body, &d.TraceParent, &d.CreatedAt, &d.Attempt, &kind, &d.Version}, func() error {
			d.Endpoint, d.Kind = endpoint, changes.Kind(kind) //nolint:gosec // G115: a kind the store wrote
			out = append(out, d)
			d.Body = nil // the next row's body gets a slice of its own
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delivered implements Outbox, in one statement. It marks the rows
// delivered whoever holds them: the endpoint has the event, even if this
// sender's lease ran out meanwhile.
func (o *Outbox) Delivered(ctx context.Context, ds []outbox.Delivery) error {
	ids := make([]string, len(ds))
	var rec attemptColumns
	for i, d := range ds {
		ids[i] = d.ID
		if d.Outcome != nil {
			rec.add(d.ID, d.Endpoint, d.Attempt, d.Outcome)
		}
	}
	if len(rec.messages) == 0 {
		_, err := o.store.pool.Exec(ctx, pgDeliveredSQL, ids)
		return err
	}
	_, err := o.store.pool.Exec(ctx, pgDeliveredRecordSQL, ids, rec.messages, rec.endpoints, rec.numbers, rec.at,
		rec.statuses, rec.errors, rec.latencies, rec.answers)
	return err
}

// attemptColumns are attempts as the columns of an unnest.
type attemptColumns struct {
	messages, endpoints, errors, answers []string
	numbers, statuses                    []int32
	at                                   []time.Time
	latencies                            []int64
}

func (c *attemptColumns) add(message, endpoint string, number int, a *outbox.Attempt) {
	c.messages, c.endpoints = append(c.messages, message), append(c.endpoints, endpoint)
	c.numbers, c.at = append(c.numbers, int32(number)), append(c.at, a.At)                //nolint:gosec // G115: an attempt number, small
	c.statuses, c.errors = append(c.statuses, int32(a.Status)), append(c.errors, a.Error) //nolint:gosec // G115: an HTTP status
	c.latencies, c.answers = append(c.latencies, a.Latency.Microseconds()), append(c.answers, a.Answer)
}

// Retry implements outbox.Outbox.
func (o *Outbox) Retry(ctx context.Context, d outbox.Delivery, after time.Duration, reason string) error {
	if a := d.Outcome; a != nil {
		_, err := o.store.pool.Exec(ctx, pgRetryRecordSQL, d.ID, d.Attempt, after.Seconds(), reason,
			d.Endpoint, a.At, a.Status, a.Error, a.Latency.Microseconds(), a.Answer)
		return err
	}
	_, err := o.store.pool.Exec(ctx, pgRetrySQL, d.ID, d.Attempt, after.Seconds(), reason)
	return err
}

// Bury implements outbox.Outbox.
func (o *Outbox) Bury(ctx context.Context, d outbox.Delivery, reason string) error {
	if a := d.Outcome; a != nil {
		_, err := o.store.pool.Exec(ctx, pgBuryRecordSQL, d.ID, d.Attempt, reason,
			d.Endpoint, a.At, a.Status, a.Error, a.Latency.Microseconds(), a.Answer)
		return err
	}
	_, err := o.store.pool.Exec(ctx, pgBurySQL, d.ID, d.Attempt, reason)
	return err
}

// DeadLetters implements outbox.Outbox.
func (o *Outbox) DeadLetters(ctx context.Context, endpoint string, limit int) ([]outbox.DeadLetter, error) {
	rows, err := o.store.pool.Query(ctx, pgDeadSQL, endpoint, limit)
	if err != nil {
		return nil, err
	}
	var out []outbox.DeadLetter
	var dl outbox.DeadLetter
	var kind int16
	_, err = pgx.ForEachRow(rows, []any{&dl.ID, &dl.Endpoint, &kind, &dl.Version, &dl.Body, &dl.CreatedAt, &dl.DiedAt, &dl.Attempts, &dl.LastError}, func() error {
		dl.Kind = changes.Kind(kind) //nolint:gosec // G115: a kind the store wrote
		out = append(out, dl)
		dl.Body = nil
		return nil
	})
	return out, err
}

// Redeliver implements outbox.Outbox.
func (o *Outbox) Redeliver(ctx context.Context, id string, configured []string) error {
	var endpoint string
	var redelivered bool
	err := o.store.pool.QueryRow(ctx, pgRedeliverSQL, id, configured).Scan(&endpoint, &redelivered)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return outbox.ErrNotFound
	case err != nil:
		return err
	case !redelivered:
		return &outbox.NotConfiguredError{Endpoint: endpoint}
	}
	return nil
}

// DropExcept implements outbox.Outbox.
func (o *Outbox) DropExcept(ctx context.Context, keep []string) (map[string]int, error) {
	if keep == nil {
		keep = []string{} // NOT (x = ANY(NULL)) is NULL, which would keep everything
	}
	rows, err := o.store.pool.Query(ctx, pgDropSQL, keep)
	if err != nil {
		return nil, err
	}
	dropped := make(map[string]int)
	var ep string
	_, err = pgx.ForEachRow(rows, []any{&ep}, func() error {
		dropped[ep]++
		return nil
	})
	return dropped, err
}

// Stats implements outbox.Outbox.
func (o *Outbox) Stats(ctx context.Context) (map[string]outbox.Stats, error) {
	rows, err := o.store.pool.Query(ctx, pgStatsSQL)
	if err != nil {
		return nil, err
	}
	out := make(map[string]outbox.Stats)
	var ep string
	var s outbox.Stats
	var oldest *time.Time
	_, err = pgx.ForEachRow(rows, []any{&ep, &s.Pending, &s.DeadLetters, &oldest}, func() error {
		s.OldestPending = time.Time{}
		if oldest != nil {
			s.OldestPending = *oldest
		}
		out[ep] = s
		return nil
	})
	return out, err
}

// Replay implements outbox.Outbox, in one statement; limit is at most
// maxReplay.
func (o *Outbox) Replay(ctx context.Context, endpoint string, since time.Time, limit int) (int, error) {
	limit = min(limit, maxReplay)
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := o.store.pool.QueryRow(ctx, pgReplaySQL, endpoint, since, limit).Scan(&n)
	return n, err
}

// Prune implements outbox.Outbox, in statements of at most pruneBatch rows.
// The attempts made before before go too, counted apart.
func (o *Outbox) Prune(ctx context.Context, before time.Time) (int, error) {
	total, err := o.pruneWith(ctx, pgPruneSQL, before)
	if err != nil {
		return total, err
	}
	_, err = o.pruneWith(ctx, pgPruneAttemptsSQL, before)
	return total, err
}

func (o *Outbox) pruneWith(ctx context.Context, sql string, before time.Time) (int, error) {
	total := 0
	for {
		tag, err := o.store.pool.Exec(ctx, sql, before, pruneBatch)
		if err != nil {
			return total, err
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}
