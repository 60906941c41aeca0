// Package queue is slotplane's queue policy core: the hierarchical queues of a test bed, their
// limits and shares, and which waiting job goes next. It is pure and deterministic, so the
// Admission workflow can call it directly: no Kubernetes, no Temporal, no clock (times come
// in as arguments).
//
// The configuration follows the Hadoop Fair Scheduler's allocation file, so an existing
// fair-scheduler.xml works unchanged.
package queue

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Resources is an amount of the two resources queues share: memory in MiB and virtual cores
// (the allocation file's "X mb, Y vcores").
type Resources struct {
	MemoryMB int64
	VCores   int64
}

// ErrBadResources: a resource string is not of the form "X mb, Y vcores".
var ErrBadResources = errors.New(`resources must look like "1024 mb, 2 vcores"`)

// ParseResources reads the allocation file's resource form: a memory amount in mb and a
// number of vcores, separated by a comma, in either order, spaces optional ("10000 mb,0vcores"
// and "2 vcores, 4096 mb" both work). Both parts are required and must not be negative.
func ParseResources(s string) (Resources, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return Resources{}, fmt.Errorf("%w, got %q", ErrBadResources, s)
	}
	var r Resources
	var haveMem, haveCPU bool
	for _, part := range parts {
		p := strings.ToLower(strings.TrimSpace(part))
		var unit string
		switch {
		case strings.HasSuffix(p, "vcores"):
			unit, p = "vcores", strings.TrimSuffix(p, "vcores")
		case strings.HasSuffix(p, "mb"):
			unit, p = "mb", strings.TrimSuffix(p, "mb")
		default:
			return Resources{}, fmt.Errorf("%w: %q has no unit (mb or vcores)", ErrBadResources, strings.TrimSpace(part))
		}
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || n < 0 {
			return Resources{}, fmt.Errorf("%w: %q is not a whole, non-negative amount", ErrBadResources, strings.TrimSpace(part))
		}
		switch {
		case unit == "mb" && !haveMem:
			r.MemoryMB, haveMem = n, true
		case unit == "vcores" && !haveCPU:
			r.VCores, haveCPU = n, true
		default:
			return Resources{}, fmt.Errorf("%w: %s is given twice in %q", ErrBadResources, unit, s)
		}
	}
	return r, nil
}

// String renders r in the allocation file's form.
func (r Resources) String() string { return fmt.Sprintf("%d mb, %d vcores", r.MemoryMB, r.VCores) }

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{MemoryMB: r.MemoryMB + o.MemoryMB, VCores: r.VCores + o.VCores}
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	return Resources{MemoryMB: r.MemoryMB - o.MemoryMB, VCores: r.VCores - o.VCores}
}

// Fits reports whether r is within limit in both resources.
func (r Resources) Fits(limit Resources) bool {
	return r.MemoryMB <= limit.MemoryMB && r.VCores <= limit.VCores
}

// Min returns the smaller of r and o in each resource.
func (r Resources) Min(o Resources) Resources {
	return Resources{MemoryMB: min(r.MemoryMB, o.MemoryMB), VCores: min(r.VCores, o.VCores)}
}

// IsZero is true for no resources.
func (r Resources) IsZero() bool { return r.MemoryMB == 0 && r.VCores == 0 }

// DominantShare is the larger of r's shares of total (DRF's measure): 0 for an empty total.
func (r Resources) DominantShare(total Resources) float64 {
	var mem, cpu float64
	if total.MemoryMB > 0 {
		mem = float64(r.MemoryMB) / float64(total.MemoryMB)
	}
	if total.VCores > 0 {
		cpu = float64(r.VCores) / float64(total.VCores)
	}
	return max(mem, cpu)
}
