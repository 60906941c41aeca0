// Package render prints what the slotplane command's verbs found: the tables of get, the
// progress bars of watch, and the reports of simulate, queues and load. It calls no API and
// reads no file; every function writes what it is given, so the output can be pinned by
// tests without a server.
package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// table writes aligned columns; the header is the first row.
func table(out io.Writer, rows [][]string) error {
	w := newTabWriter(out)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	return w.Flush()
}

// newTabWriter is the column layout every table of the command shares: two spaces between
// columns, padded with spaces.
func newTabWriter(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
}

// orDash is s, or - when it is empty: a table's empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// slotList is slot positions as one cell: 0,1,5.
func slotList(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return orDash(strings.Join(parts, ","))
}

// resources is an amount as the tables print shares and usage: memory in whole MB, rounded
// down as YARN's UI prints it, and vcores to two decimals, rounded down (a job may ask for
// part of a core): "43690 mb, 5.33 vcores". A share is a division, and its exact value
// ("43690.66666698455810546875 mb") says nothing more.
func resources(r apitypes.Resources) string {
	return shown(queue.Resources{MemoryBytes: r.MemoryBytes, MilliCores: r.MilliCores})
}

func shown(r queue.Resources) string {
	if r.MemoryBytes < 0 || r.MilliCores < 0 {
		return r.String() // no share or usage is below zero; shown exactly if one were
	}
	mb := strconv.FormatInt(r.MemoryBytes>>20, 10) // an mb is 2^20 bytes
	hundredths := r.MilliCores / 10
	cores := strconv.FormatInt(hundredths/100, 10)
	if rest := hundredths % 100; rest != 0 {
		cores += "." + strings.TrimRight(fmt.Sprintf("%02d", rest), "0")
	}
	return mb + " mb, " + cores + " vcores"
}

// totalJobs is a Scheduling's job count: its status's, or its spec's before the workflow
// wrote one.
func totalJobs(s apitypes.Scheduling) int {
	if s.Status.TotalJobs > 0 {
		return int(s.Status.TotalJobs)
	}
	return len(s.Jobs)
}

// Ended is whether a Scheduling in state st is done for good: completed, failed or
// cancelled. The tables and bars mark a deleted Scheduling as cancelling until then, and
// watch stops once every Scheduling it follows has ended.
func Ended(st v1alpha1.SchedulingState) bool { return st.Ended() }
