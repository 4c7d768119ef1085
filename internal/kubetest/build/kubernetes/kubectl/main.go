// Command kubectl is Kubernetes' kubectl, built from the Go module proxy at
// the version go.mod pins, for internal/kubetest: the tests run the commands
// of docs/kubernetes.md with it. (Debian's kubectl is too old for kustomize v5.)
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err) // prints the error as kubectl does and exits non-zero
	}
}
