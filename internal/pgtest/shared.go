package pgtest

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// The cluster a test binary shares, started by the first NewDatabase.
var (
	mainRunning bool // set by Main: someone will stop the shared cluster
	sharedOnce  sync.Once
	shared      *Cluster
	sharedErr   error
)

// Main runs a test package's tests and then removes the shared cluster, if
// one was started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	mainRunning = true
	code := m.Run()
	if shared != nil {
		if err := shared.Destroy(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// Shared returns the test binary's shared cluster, starting it on first
// use. It needs Main in the package's TestMain, which removes the cluster
// when the tests are done.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if !mainRunning {
		t.Fatal("pgtest: the package's TestMain must call pgtest.Main(m), which removes the shared cluster after the tests")
	}
	sharedOnce.Do(func() { shared, sharedErr = StartCluster() })
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
