// Command kube-apiserver is Kubernetes' kube-apiserver, built from the Go module proxy at
// the version go.mod pins, for internal/kubetest.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go's metrics, as the release binary registers them

	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
