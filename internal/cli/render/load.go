package render

import (
	"fmt"
	"io"

	"slotplane/internal/loadgen"
)

// Load prints a load run: each kind's latency percentiles, then how many jobs it created
// and the start of their names, for cleaning them up.
func Load(out io.Writer, r loadgen.Report) {
	r.Table(out)
	fmt.Fprintf(out, "%d jobs created, named %s...\n", len(r.Created), commonPrefix(r.Created))
}

// commonPrefix is the start all names share.
func commonPrefix(names []string) string {
	if len(names) == 0 {
		return ""
	}
	p := names[0]
	for _, n := range names[1:] {
		for len(p) > 0 && (len(n) < len(p) || n[:len(p)] != p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
