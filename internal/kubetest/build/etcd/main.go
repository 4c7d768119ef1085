// Command etcd is etcd's server, built from the Go module proxy at the version
// go.mod pins, for internal/kubetest: no prebuilt download, no other network.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
