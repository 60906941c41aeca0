package render

import (
	"fmt"
	"io"

	"slotplane/queue"
)

// Settings prints the settings in force, each as its yarn-site.xml property, and where they
// come from (source, a file; "" for the defaults). The two placement settings are marked
// unused when the allocation file has its own placement policy, as Hadoop ignores them then.
func Settings(out io.Writer, a *queue.Allocations, source string) {
	if source == "" {
		source = "the defaults; -settings reads a " + queue.SettingsFile
	}
	fmt.Fprintf(out, "\nsettings (%s):\n", source)
	w := newTabWriter(out)
	for _, p := range a.Properties() {
		note := ""
		if len(a.Placement) > 0 && (p.Name == queue.PropUserAsDefaultQueue || p.Name == queue.PropAllowUndeclaredPools) {
			note = "\t(unused: the allocation file has a queuePlacementPolicy)"
		}
		fmt.Fprintf(w, "  %s\t%s%s\n", p.Name, p.Value, note)
	}
	_ = w.Flush()
	if n := a.OtherProperties; n > 0 {
		fmt.Fprintf(out, "  and %d properties of other parts of YARN, left alone\n", n)
	}
}
