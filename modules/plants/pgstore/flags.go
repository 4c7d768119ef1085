package pgstore

import (
	"errors"
	"flag"
	"fmt"
	"math"
)

// RegisterFlags defines the postgres store's flags on fs, each filling its
// field of c with its default. Tracer has no flag: the program sets it.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "postgres-url", "", "PostgreSQL connection URL or key=value string; what it leaves out comes from libpq's PG* variables (PGHOST, PGDATABASE, PGUSER, PGPASSWORD, ...)")
	fs.IntVar(&c.MaxConns, "postgres-max-conns", defaultMaxConns, "PostgreSQL connections per process (the pool size)")
	fs.DurationVar(&c.ConnectTimeout, "postgres-connect-timeout", defaultConnectTimeout, "how long opening a PostgreSQL connection may take (wins over connect_timeout in the URL)")
	fs.DurationVar(&c.StatementTimeout, "postgres-statement-timeout", defaultStatementTimeout, "how long a statement may run on PostgreSQL (wins over statement_timeout in the URL)")
	fs.DurationVar(&c.CommitTimeout, "postgres-commit-timeout", defaultCommitTimeout, "how long a write whose caller was answered 503 at its deadline may keep its connection, waiting for its commit (for a synchronous standby, say), before the connection is closed; never canceled")
}

// Validate reports every value of c that its flag does not accept, one
// error per problem, each naming the flag (errors.Join's parts). Unlike
// New, which takes a zero value as its default, it refuses zeros: a flag
// set to 0 is a mistake, not a request for the default. The URL is not
// checked here: "" is valid (libpq's PG* variables may say it all), and
// New reports one it cannot parse.
func (c Config) Validate() error {
	var errs []error
	if c.MaxConns <= 0 || c.MaxConns > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("--postgres-max-conns %d: want a positive number", c.MaxConns))
	}
	if c.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--postgres-connect-timeout %v: must be positive", c.ConnectTimeout))
	}
	if c.StatementTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--postgres-statement-timeout %v: must be positive", c.StatementTimeout))
	}
	if c.CommitTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--postgres-commit-timeout %v: must be positive", c.CommitTimeout))
	}
	return errors.Join(errs...)
}
