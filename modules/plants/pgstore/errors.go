package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// failed wraps the error of a store call, marking it plant.ErrUnavailable
// when the database could not be reached or could not serve the call right
// now, so that the API answers 503 with Retry-After instead of 500.
func failed(op string, err error) error {
	return &callError{op: op, err: err, unavailable: unavailable(err)}
}

// callError is a failed store call.
type callError struct {
	op          string
	err         error
	unavailable bool
}

// Error is one line: pgx puts each address it tried on a line of its own,
// and the program prints a start-up failure as one line.
func (e *callError) Error() string {
	return "postgres: " + e.op + ": " + oneLine.Replace(e.err.Error())
}

var oneLine = strings.NewReplacer(":\n\t", ": ", "\n\t", "; ", "\n", "; ")

func (e *callError) Unwrap() []error {
	if e.unavailable {
		return []error{plant.ErrUnavailable, e.err}
	}
	return []error{e.err}
}

// unavailable reports whether err means "not now" rather than "never":
// the connection could not be made or broke, the call ran out of time, or
// the server refused for a passing reason (shutting down, starting up, out
// of connections, a failover's read-only standby). Errors in the statement
// itself stay what they are, and the API answers them with 500.
func unavailable(err error) bool {
	if errors.Is(err, errUnreplicated) || errors.Is(err, errBacklog) {
		return true // committed or not, as the failover decides: unknown
	}
	if errors.Is(err, errOtherServer) {
		return true // a failover is under way: the next read goes to the new primary
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true // whatever the reason, there is no usable database
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return transientState(pgErr.Code)
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// transientState reports whether a SQLSTATE is worth retrying later.
// https://www.postgresql.org/docs/current/errcodes-appendix.html
func transientState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "53"), // insufficient resources: too many connections, disk full
		strings.HasPrefix(code, "40"): // serialization failure, deadlock
		return true
	}
	switch code {
	case "57P01", // admin_shutdown: the server is stopping
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now: starting up or shutting down
		"57P05", // idle_session_timeout
		"57014", // query_canceled: statement_timeout
		"55P03", // lock_not_available: lock_timeout
		"25006": // read_only_sql_transaction: connected to a standby, e.g. mid-failover
		return true
	}
	return false
}
