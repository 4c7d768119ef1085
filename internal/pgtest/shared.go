package pgtest

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// The cluster a test binary shares, started by the first NewDatabase (or
// by MainStartingCluster).
var (
	mainRunning bool // set by Main: someone will stop the shared cluster
	sharedOnce  sync.Once
	shared      *Cluster
	sharedErr   error
	sharedStart sync.WaitGroup // a start MainStartingCluster began
)

func startShared() { shared, sharedErr = StartCluster() }

// Main runs a test package's tests and then removes the shared cluster, if
// one was started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	mainRunning = true
	code := m.Run()
	sharedStart.Wait()
	if shared != nil {
		if err := shared.Destroy(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// MainStartingCluster is Main for a package whose tests mostly run on the
// shared cluster: it starts the cluster while the first tests run, so that
// the first test on it waits only for what is left of the start (seconds
// on a busy machine), not for all of it. A run whose tests use no cluster
// pays for one started and removed for nothing.
func MainStartingCluster(m *testing.M) {
	sharedStart.Go(func() { sharedOnce.Do(startShared) })
	Main(m)
}

// Shared returns the test binary's shared cluster, starting it on first
// use. It needs Main in the package's TestMain, which removes the cluster
// when the tests are done.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if !mainRunning {
		t.Fatal("pgtest: the package's TestMain must call pgtest.Main(m), which removes the shared cluster after the tests")
	}
	sharedOnce.Do(startShared)
	if sharedErr != nil {
		unavailable(t, sharedErr)
	}
	return shared
}

// NewDatabase returns the URL of an empty database on the shared cluster,
// the test's alone until it ends (see Cluster.NewDatabase).
func NewDatabase(t testing.TB) string {
	t.Helper()
	return Shared(t).NewDatabase(t)
}
