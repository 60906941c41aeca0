// Command kube-scheduler is the upstream scheduler, built from a pinned module version for the
// local control plane (internal/localplatform/localcluster).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
