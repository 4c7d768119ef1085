// Package compose holds the test of deploy/compose: three plantstore
// replicas on PostgreSQL behind HAProxy, for trying the scale-out on one
// machine. The test validates the file with docker-compose itself (`config`)
// and HAProxy's configuration with haproxy itself (`-c`); it does not start
// the stack (see docs/reliability.md for why and what that leaves untested).
package compose
