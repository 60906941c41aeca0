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

// Resources is an amount of the two resources queues share, counted exactly: memory in bytes
// and cpu in millicores, as Kubernetes counts them. The allocation file speaks in mb (MiB)
// and whole vcores; here a driver of 250m is a quarter of a vcore, not a whole one, so limits
// such as maxAMShare see what it really takes.
type Resources struct {
	MemoryBytes int64
	MilliCores  int64
}

// The allocation file's units: its "mb" is a MiB, and a vcore is a thousand millicores.
const (
	mib           int64 = 1 << 20
	milliPerVCore int64 = 1000
)

// maxMB and maxVCores bound the amounts ParseResources reads (8 PiB, and 2^33 vcores: far
// beyond any cluster, and above the Fair Scheduler's "unlimited" of 2147483647). In bytes and
// millicores they stay below 2^53, so the float64 arithmetic of the shares holds them exactly
// and a thousand of them add up without overflowing an int64.
const (
	maxMB     = 1 << 33
	maxVCores = 1 << 33
)

// MBVCores is the amount the allocation file writes "memoryMB mb, vcores vcores".
func MBVCores(memoryMB, vcores int64) Resources {
	return Resources{MemoryBytes: memoryMB * mib, MilliCores: vcores * milliPerVCore}
}

// ErrBadResources: a resource string is not of the form "X mb, Y vcores".
var ErrBadResources = errors.New(`resources must look like "1024 mb, 2 vcores"`)

// ParseResources reads the allocation file's resource form: a whole amount of memory in mb
// and a whole number of vcores, separated by a comma, in either order, spaces optional
// ("10000 mb,0vcores" and "2 vcores, 4096 mb" both work). Both parts are required, must not
// be negative, nor larger than 8 PiB and 2^33 vcores.
func ParseResources(s string) (Resources, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return Resources{}, fmt.Errorf("%w, got %q", ErrBadResources, s)
	}
	var mem, cpu int64
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
		if unit == "mb" && n > maxMB || unit == "vcores" && n > maxVCores {
			return Resources{}, fmt.Errorf("%w: %q is more than the queues count", ErrBadResources, strings.TrimSpace(part))
		}
		switch {
		case unit == "mb" && !haveMem:
			mem, haveMem = n, true
		case unit == "vcores" && !haveCPU:
			cpu, haveCPU = n, true
		default:
			return Resources{}, fmt.Errorf("%w: %s is given twice in %q", ErrBadResources, unit, s)
		}
	}
	return MBVCores(mem, cpu), nil
}

// String renders r in the allocation file's form. An amount that is not a whole number of mb
// or vcores shows its exact fraction ("512 mb, 0.25 vcores", "0.5 mb, 1 vcores"), so nothing
// is lost; ParseResources reads only the whole form.
func (r Resources) String() string {
	return fraction(r.MemoryBytes, 20) + " mb, " + millis(r.MilliCores) + " vcores" // an mb is 2^20 bytes
}

// fraction writes n / 2^shift as an exact decimal: a power of two divides into a finite one.
func fraction(n int64, shift uint) string {
	u, sign := magnitude(n)
	mask := uint64(1)<<shift - 1
	out := sign + strconv.FormatUint(u>>shift, 10)
	if rest := u & mask; rest != 0 {
		out += "."
		for rest != 0 { // at most shift digits; rest*10 stays below 2^(shift+4)
			rest *= 10
			out += strconv.FormatUint(rest>>shift, 10)
			rest &= mask
		}
	}
	return out
}

// millis writes n / 1000 as a decimal without trailing zeros.
func millis(n int64) string {
	u, sign := magnitude(n)
	out := sign + strconv.FormatUint(u/uint64(milliPerVCore), 10)
	if rest := u % uint64(milliPerVCore); rest != 0 {
		out += "." + strings.TrimRight(fmt.Sprintf("%03d", rest), "0")
	}
	return out
}

// magnitude is |n| and its sign: amounts go negative as differences (free room after a
// reservation, in messages). It is right for math.MinInt64 too.
func magnitude(n int64) (uint64, string) {
	if n < 0 {
		return uint64(-n), "-"
	}
	return uint64(n), ""
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{MemoryBytes: r.MemoryBytes + o.MemoryBytes, MilliCores: r.MilliCores + o.MilliCores}
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	return Resources{MemoryBytes: r.MemoryBytes - o.MemoryBytes, MilliCores: r.MilliCores - o.MilliCores}
}

// times is n of r: n slots of one size, say.
func times(r Resources, n int64) Resources {
	return Resources{MemoryBytes: r.MemoryBytes * n, MilliCores: r.MilliCores * n}
}

// Fits reports whether r is within limit in both resources.
func (r Resources) Fits(limit Resources) bool {
	return r.MemoryBytes <= limit.MemoryBytes && r.MilliCores <= limit.MilliCores
}

// Min returns the smaller of r and o in each resource.
func (r Resources) Min(o Resources) Resources {
	return Resources{MemoryBytes: min(r.MemoryBytes, o.MemoryBytes), MilliCores: min(r.MilliCores, o.MilliCores)}
}

// IsZero is true for no resources.
func (r Resources) IsZero() bool { return r.MemoryBytes == 0 && r.MilliCores == 0 }

// DominantShare is the larger of r's shares of total (DRF's measure): 0 for an empty total.
func (r Resources) DominantShare(total Resources) float64 {
	var mem, cpu float64
	if total.MemoryBytes > 0 {
		mem = float64(r.MemoryBytes) / float64(total.MemoryBytes)
	}
	if total.MilliCores > 0 {
		cpu = float64(r.MilliCores) / float64(total.MilliCores)
	}
	return max(mem, cpu)
}
