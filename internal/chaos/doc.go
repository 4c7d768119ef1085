// Package chaos is the fault-injection test of plantstore's scale-out, after
// Jepsen's method: several real plantstore processes on one PostgreSQL
// behind a real load balancer (HAProxy, health-checked on /readyz), a fault
// proxy (Toxiproxy, in-process) between each replica and the database, many
// clients on a small set of ids through the load balancer, and a nemesis
// that kills, stops, cuts, slows and resets while they run. Every operation
// is recorded with its invocation and completion times and its answer; an
// answer that does not say what happened (a timeout, a reset, a 503, a 502)
// is recorded as unknown. Porcupine then checks the whole history against a
// sequential model of the store, one search per id, each bounded in time
// (an id it cannot decide is reported, not guessed). The postgres-ha
// variant runs the same on a primary and a synchronous standby under
// Patroni and etcd, with faults of its own: the primary killed, a
// switchover, a stalled standby, partitions, an operator's cancel.
//
// The pieces, one file each: history (the record of operations), model (the
// sequential specification), check (Porcupine, and its HTML visualisation
// on failure), replica (a plantstore child process), haproxy, faultproxy
// (Toxiproxy), patroni (the highly available database), workload (the
// clients), nemesis and nemesis_ha (the faults and their schedule),
// survivor (the final reads against the acknowledged writes), webhooks
// (every acknowledged create delivered to a receiver on loopback, checked
// at the end), events (every change's envelope delivered to a second
// receiver: applied per plant by version they must give the final reads,
// none foreign, every acknowledged write's there, one event per version),
// feed and feedcheck (a follower of GET /plants/changes on a replica drawn
// at random for each long poll: cursors strictly increasing, each plant's
// versions increasing, and its mirror the final reads), mirror (the final
// reads those mirrors are held against), summary (what a run prints at its
// end), and run (all of it together). docs/reliability.md describes the method and how to replay a
// run from its seed.
package chaos
