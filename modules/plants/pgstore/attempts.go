package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
)

// The record of attempts (migration 0007): written by the statements that
// settle a delivery (outbox.go), read here.
const (
	pgAttemptColumns = `seq, message, endpoint, number, at, status, error, latency_us, answer`
	// pgAttemptsSQL lists endpoint $1's attempts below seq $2 (0: from
	// the newest), all of them ($3 = 0), those that succeeded (1) or
	// those that failed (2), newest first, at most $4.
	pgAttemptsSQL = `SELECT ` + pgAttemptColumns + ` FROM webhook_attempts
WHERE endpoint = $1 AND ($2::bigint = 0 OR seq < $2)
  AND ($3::int = 0 OR ($3 = 1) = (status BETWEEN 200 AND 299))
ORDER BY seq DESC LIMIT $4`
	pgMessageSQL = `SELECT id, endpoint, kind, version, body, created_at,
  CASE WHEN dead_at IS NOT NULL THEN 'dead' WHEN delivered_at IS NOT NULL THEN 'delivered' ELSE 'pending' END
FROM webhook_deliveries WHERE id = $1`
	pgMessageAttemptsSQL = `SELECT ` + pgAttemptColumns + ` FROM webhook_attempts WHERE message = $1 ORDER BY seq`
	// pgResendSQL makes the message $1 due now, whatever its state, if
	// its endpoint is one of $2, in one statement; it returns the
	// message's endpoint and whether it was made due, and no row when
	// there is no such message.
	pgResendSQL = `WITH m AS (
  SELECT id, endpoint FROM webhook_deliveries WHERE id = $1 FOR UPDATE
), resent AS (
  UPDATE webhook_deliveries d SET dead_at = NULL, delivered_at = NULL, attempts = 0, next_attempt_at = now(), last_error = ''
  FROM m WHERE d.id = m.id AND m.endpoint = ANY($2) RETURNING d.id
)
SELECT m.endpoint, EXISTS (SELECT 1 FROM resent) FROM m`
)

// Attempts implements outbox.Attempts.
func (o *Outbox) Attempts(ctx context.Context, q outbox.AttemptQuery) ([]outbox.Attempt, error) {
	filter := 0
	if q.Succeeded != nil {
		filter = 2
		if *q.Succeeded {
			filter = 1
		}
	}
	rows, err := o.store.pool.Query(ctx, pgAttemptsSQL, q.Endpoint, q.Before, filter, q.Limit)
	if err != nil {
		return nil, err
	}
	return collectAttempts(rows)
}

func collectAttempts(rows pgx.Rows) ([]outbox.Attempt, error) {
	var out []outbox.Attempt
	var a outbox.Attempt
	var latency int64
	_, err := pgx.ForEachRow(rows, []any{&a.Seq, &a.Message, &a.Endpoint, &a.Number, &a.At, &a.Status, &a.Error, &latency, &a.Answer}, func() error {
		a.Latency = time.Duration(latency) * time.Microsecond
		out = append(out, a)
		return nil
	})
	return out, err
}

// Message implements outbox.Attempts: the message and its attempts as one
// snapshot (a repeatable-read transaction), so that its state and its
// attempts agree.
func (o *Outbox) Message(ctx context.Context, id string) (outbox.Message, error) {
	var m outbox.Message
	err := pgx.BeginTxFunc(ctx, o.store.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var kind int16
		err := tx.QueryRow(ctx, pgMessageSQL, id).Scan(&m.ID, &m.Endpoint, &kind, &m.Version, &m.Body, &m.CreatedAt, &m.State)
		if errors.Is(err, pgx.ErrNoRows) {
			return outbox.ErrNoMessage
		}
		if err != nil {
			return err
		}
		m.Kind = changes.Kind(kind) //nolint:gosec // G115: a kind the store wrote
		rows, err := tx.Query(ctx, pgMessageAttemptsSQL, id)
		if err != nil {
			return err
		}
		m.Attempts, err = collectAttempts(rows)
		return err
	})
	return m, err
}

// Resend implements outbox.Attempts.
func (o *Outbox) Resend(ctx context.Context, id string, configured []string) error {
	var endpoint string
	var resent bool
	err := o.store.pool.QueryRow(ctx, pgResendSQL, id, configured).Scan(&endpoint, &resent)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return outbox.ErrNoMessage
	case err != nil:
		return err
	case !resent:
		return &outbox.NotConfiguredError{Endpoint: endpoint}
	}
	return nil
}
