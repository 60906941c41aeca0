// Package examples holds sample objects for the local platform, embedded so the binary can
// submit them (kubectl apply -f examples/ does the same by hand): a test bed, three jobs
// (Spark and Flink), a QueueBased and a SlotBased Scheduling of them, and an allocation
// file (fair-scheduler.xml) for two teams with its settings (yarn-site.xml).
package examples

import "embed"

// Files are the YAML files and the allocation file of this folder.
//
//go:embed *.yaml *.xml
var Files embed.FS
