package pgstore

import (
	"testing"

	"github.com/plantstore/plantstore/internal/pgtest"
)

// TestOnAClusterAlone runs, one after another on one cluster of their own,
// the tests that need a cluster to themselves, so that they run in
// parallel with the package's other tests (on the shared cluster) rather
// than alone before them, and cost one server's start between them, not
// one each:
//
//   - the change log's tests, and the conformance suite, which holds
//     the change log's: the log shows a change once every older
//     transaction of the cluster has ended, whatever its database, so
//     another test's transaction (one held open, or a create in flight)
//     would hide their changes, and the pruner keeps what the cluster's
//     oldest running transaction may need;
//   - a test that counts the cluster's transaction ids and turns its
//     autovacuum off;
//   - a test that stops and starts the server, last: a failure that left
//     the server down would fail what came after it.
//
// It takes longest of the package's tests, so it is best started first of
// the parallel ones. Go releases them all at once, and its scheduler tends
// to start the last declared first: this file's name sorts after the
// package's other test files. Nothing but the run's length depends on it.
func TestOnAClusterAlone(t *testing.T) {
	t.Parallel()
	c := pgtest.NewCluster(t)
	for _, tc := range []struct {
		name string
		test func(t *testing.T, c *pgtest.Cluster)
	}{
		// First, on a cluster no test has written to yet: no autovacuum
		// work is due when it counts transaction ids.
		{"ReadsWriteNothingWithoutSynchronousStandbys", testReadsWriteNothingWithoutSynchronousStandbys},
		{"VersionOfACreateThatWaitedForADelete", testVersionOfACreateThatWaitedForADelete},
		{"AChangeThatWaitedForAnotherComesAfterIt", testAChangeThatWaitedForAnotherComesAfterIt},
		{"PruneHeadsKeepsWhatARunningTransactionNeeds", testPruneHeadsKeepsWhatARunningTransactionNeeds},
		{"AnOpenOlderTransactionHidesLaterChanges", testAnOpenOlderTransactionHidesLaterChanges},
		{"IdenticalReplaceWritesNothing", testIdenticalReplaceWritesNothing},
		{"PlanRowsOfAFailedChangeAreNotWritten", testPlanRowsOfAFailedChangeAreNotWritten},
		{"Conformance", testConformance},
		{"RecoversWhenTheServerReturns", testRecoversWhenTheServerReturns},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, c) })
	}
}
