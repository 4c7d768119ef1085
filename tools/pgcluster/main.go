// Command pgcluster runs a command against a throwaway PostgreSQL server:
// it starts a cluster made with initdb and pg_ctl (as the tests do, see
// internal/pgtest), creates a database, runs the command with
// PLANTSTORE_POSTGRES_URL and the libpq variables (PGHOST, PGPORT, PGUSER,
// PGDATABASE) pointing at it, and removes the cluster when the command
// ends. With -standby the server is a primary with a synchronous standby
// (synchronous_standby_names = '*', as internal/pgtest's pairs), and the
// command's variables point at the primary. It is how the postgres
// benchmarks run:
//
//	go run ./tools/pgcluster -migrate -- make bench
//	go run ./tools/pgcluster -migrate -- pgbench -n -c 32 -j 2 -T 10 -M prepared -f tools/pgcluster/insert.sql
//	go run ./tools/pgcluster -migrate -standby -- tools/pgcluster/reads.sh 3 32 8
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
)

func main() {
	os.Exit(run())
}

func run() int {
	migrate := flag.Bool("migrate", false, "create plantstore's schema in the database before running the command")
	standby := flag.Bool("standby", false, "start a synchronous standby beside the server")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: pgcluster [-migrate] [-standby] -- command [arg...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		return 2
	}
	c, db, destroy, err := start(*standby)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgcluster: %v\n", err)
		return 1
	}
	defer func() {
		if err := destroy(); err != nil {
			fmt.Fprintf(os.Stderr, "pgcluster: %v\n", err)
		}
	}()
	url := c.URL(db)
	if *migrate {
		s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url})
		if err != nil {
			fmt.Fprintf(os.Stderr, "pgcluster: %v\n", err)
			return 1
		}
		s.Close()
	}
	fmt.Fprintf(os.Stderr, "pgcluster: PLANTSTORE_POSTGRES_URL=%s\n", url)

	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"PLANTSTORE_POSTGRES_URL="+url,
		"PGHOST="+c.SocketDir(), "PGPORT=5432", "PGUSER="+pgtest.Superuser, "PGDATABASE="+db)
	// Ctrl-C reaches the command; pgcluster stays to remove the cluster.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "pgcluster: %v\n", err)
		return 1
	}
	go func() {
		for sig := range signals {
			_ = cmd.Process.Signal(sig)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgcluster: %v\n", err)
		return 1
	}
	return 0
}

// start starts the server, with a synchronous standby when standby is
// set, and returns the server the command uses, its database, and what
// removes it all.
func start(standby bool) (c *pgtest.Cluster, db string, destroy func() error, err error) {
	if standby {
		const db = "plants"
		pair, err := pgtest.StartPair(db)
		if err != nil {
			return nil, "", nil, err
		}
		return pair.Primary, db, pair.Destroy, nil
	}
	c, err = pgtest.StartCluster()
	if err != nil {
		return nil, "", nil, err
	}
	if db, err = c.CreateDatabase(); err != nil {
		return nil, "", nil, errors.Join(err, c.Destroy())
	}
	return c, db, c.Destroy, nil
}
