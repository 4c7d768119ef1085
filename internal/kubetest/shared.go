package kubetest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/plantstore/plantstore/internal/testmode"
)

// The control plane a test binary shares, started by the first Shared.
var (
	mainRunning bool // set by Main: someone will stop the shared one
	sharedOnce  sync.Once
	shared      *ControlPlane
	sharedErr   error
)

// Main runs a test package's tests and then stops the shared control plane,
// if one was started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
func Main(m *testing.M) {
	mainRunning = true
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// Shared returns the test binary's shared control plane, starting it on
// first use. Tests keep apart by namespace (NewNamespace). It needs Main in
// the package's TestMain, which stops it after the tests.
func Shared(t testing.TB) *ControlPlane {
	t.Helper()
	testmode.SkipIfShort(t, "starts a Kubernetes control plane")
	if !mainRunning {
		t.Fatal("kubetest: the package's TestMain must call kubetest.Main(m), which stops the shared control plane after the tests")
	}
	sharedOnce.Do(func() { shared, sharedErr = startControlPlane() })
	if sharedErr != nil {
		unavailable(t, sharedErr)
	}
	return shared
}
