// Package examples holds sample objects for the local platform, embedded so the binary can
// submit them (kubectl apply -f examples/ does the same by hand): a test bed, three jobs
// (Spark and Flink), and a QueueBased and a SlotBased Scheduling of them.
package examples

import "embed"

// Files are the YAML files of this folder.
//
//go:embed *.yaml
var Files embed.FS
