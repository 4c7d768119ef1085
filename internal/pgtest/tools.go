package pgtest

import "syscall"

// BinDir is the directory of the installed PostgreSQL server programs
// (initdb, postgres, pg_ctl, pg_rewind, ...), for a harness that runs a
// server through another program, such as a failover manager.
func BinDir() (string, error) { return findBinDir() }

// ServerCredential is the user a server must run as: nil for the current
// one, or "nobody" when that is root (PostgreSQL refuses to run as root).
func ServerCredential() (*syscall.Credential, error) { return serverCredential() }
