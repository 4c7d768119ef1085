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
	unused := early.untaken()
	if shared != nil {
		unused = append(unused, shared)
	}
	for _, c := range unused {
		if err := c.Destroy(); err != nil {
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

// MainStartingClusters is MainStartingCluster for a package whose tests
// also take clusters of their own (NewCluster): it also starts `own` such
// clusters while the first tests run, and NewCluster hands them out, as
// they come up, before it starts any. A run whose tests take fewer pays for the rest
// started and removed for nothing.
func MainStartingClusters(m *testing.M, own int) {
	early.begin(own, StartCluster)
	MainStartingCluster(m)
}

// early holds the clusters of their own MainStartingClusters began.
var early earlyStarts

// earlyStarts are cluster starts begun before any test asked for them.
type earlyStarts struct {
	mu    sync.Mutex
	left  int                 // begun and not taken
	ready chan startedCluster // each begun one, once its start ends
}

type startedCluster struct {
	c   *Cluster
	err error
}

// begin begins n starts.
func (e *earlyStarts) begin(n int, start func() (*Cluster, error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.left = n
	e.ready = make(chan startedCluster, n)
	for range n {
		go func() {
			c, err := start()
			e.ready <- startedCluster{c, err}
		}()
	}
}

// take returns a begun cluster, waiting for the rest of its start, or
// starts one with start when none is left.
func (e *earlyStarts) take(start func() (*Cluster, error)) (*Cluster, error) {
	e.mu.Lock()
	begun := e.left > 0
	if begun {
		e.left--
	}
	e.mu.Unlock()
	if !begun {
		return start()
	}
	s := <-e.ready
	return s.c, s.err
}

// untaken waits for the begun starts that no test took and returns the
// clusters they started, for Main to remove.
func (e *earlyStarts) untaken() []*Cluster {
	e.mu.Lock()
	left := e.left
	e.left = 0
	e.mu.Unlock()
	var cs []*Cluster
	for range left {
		if s := <-e.ready; s.c != nil {
			cs = append(cs, s.c)
		}
	}
	return cs
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
