// Command crdpaths prints the flattened schema of one version of a CRD (package
// crds/schemapaths), one field per line. It made the upstream field tables in crds/testdata
// from the operators' released CRDs:
//
//	go run ./hack/crdpaths -version v1beta2 sparkoperator.k8s.io_sparkapplications.yaml
package main

import (
	"flag"
	"fmt"
	"os"

	"slotplane/crds/schemapaths"
)

func main() {
	version := flag.String("version", "", "the CRD version whose schema to print")
	flag.Parse()
	if flag.NArg() != 1 || *version == "" {
		fmt.Fprintln(os.Stderr, "usage: crdpaths -version V crd.yaml")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fields, err := schemapaths.FromCRD(data, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, f := range fields {
		fmt.Println(f)
	}
}
