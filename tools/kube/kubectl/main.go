// Command kubectl is the upstream client at the version of the local control plane, so
// `make run` users need no kubectl of their own.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
	// Client auth plugins, as the upstream kubectl has them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err) // prints the error the way kubectl users know, and exits
	}
}
