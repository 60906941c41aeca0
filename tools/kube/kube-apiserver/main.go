// Command kube-apiserver is the upstream API server, built from a pinned module version so the
// local control plane (internal/localplatform/localcluster) needs nothing but the Go toolchain.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
