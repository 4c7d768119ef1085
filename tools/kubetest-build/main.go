// Command kubetest-build builds the control plane the Kubernetes tests
// start (internal/kubetest: etcd, kube-apiserver, kube-controller-manager
// and kubectl, from the Go module proxy) into its cache, printing what it
// does. .ci/run calls it before the tests, so that a cold build (many
// minutes on two cores) does not eat into the test timeout:
//
//	go run ./tools/kubetest-build
package main

import (
	"fmt"
	"os"

	"github.com/plantstore/plantstore/internal/kubetest"
)

func main() {
	dirs, err := kubetest.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, d := range dirs {
		fmt.Println(d)
	}
}
