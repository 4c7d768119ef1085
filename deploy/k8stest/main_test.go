package k8stest

import (
	"testing"

	"github.com/plantstore/plantstore/internal/kubetest"
)

// TestMain stops the control plane the apply tests share.
func TestMain(m *testing.M) { kubetest.Main(m) }
