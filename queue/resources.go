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

// ErrBadResources: a resource string is in none of the allocation file's forms.
var ErrBadResources = errors.New(`resources must look like "1024 mb, 2 vcores" or "memory-mb=1024, vcores=2"`)

// ParseResources reads an amount of resources in either form the Fair Scheduler takes:
//
//   - Hadoop 2's "X mb, Y vcores": whole amounts, in either order, spaces optional
//     ("10000 mb,0vcores", "2 vcores, 4096 mb"); both are required.
//   - Hadoop 3's "memory-mb=X, vcores=Y": whole amounts, in any order; one left out is 0.
//     Other resource types (yarn.io/gpu=2) are read but have no slots to count them: they are
//     refused here; an allocation file reports them as ignored (ParseAllocations).
//
// Amounts must not be negative, nor larger than 8 PiB and 2^33 vcores. Percentages are
// limits of a share of the test bed, which only maxResources and its kind take
// (ParseResourceLimit).
func ParseResources(s string) (Resources, error) {
	set, err := parseSetting(s, false)
	if err != nil {
		return Resources{}, err
	}
	if len(set.others) > 0 {
		return Resources{}, fmt.Errorf("%w: %s counts no resource slots have (memory-mb and vcores only)", ErrBadResources, strings.Join(set.others, ", "))
	}
	return set.amount, nil
}

// Percent is a limit as shares of the test bed, in percent of each resource.
type Percent struct {
	Memory, CPU float64
}

// Of is p of total, rounded down to whole mb (the file's unit; the Fair Scheduler rounds
// down too) and whole millicores.
func (p Percent) Of(total Resources) Resources {
	mem := int64(float64(total.MemoryBytes)*p.Memory/100) / mib * mib
	return Resources{MemoryBytes: mem, MilliCores: int64(float64(total.MilliCores) * p.CPU / 100)}
}

func (p Percent) String() string {
	return strconv.FormatFloat(p.Memory, 'f', -1, 64) + "% memory, " + strconv.FormatFloat(p.CPU, 'f', -1, 64) + "% cpu"
}

// ResourceLimit is what maxResources, maxChildResources and queueMaxResourcesDefault hold:
// an amount, or a share of the test bed (Percent set), and the other resource types it
// named, which slots do not have.
type ResourceLimit struct {
	Amount  Resources
	Percent *Percent
	Others  []string
}

// ParseResourceLimit reads a limit in any form the Fair Scheduler takes for maxResources:
// the two forms of ParseResources (where a resource the Hadoop 3 form leaves out is not
// limited), or a share of the test bed: "X%" for every resource, "X% memory, Y% cpu", or
// "memory-mb=X%, vcores=Y%" (one left out is 100%). Percentages are between 0 and 100.
func ParseResourceLimit(s string) (ResourceLimit, error) {
	set, err := parseSetting(s, true)
	if err != nil {
		return ResourceLimit{}, err
	}
	return ResourceLimit{Amount: set.amount, Percent: set.percent, Others: set.others}, nil
}

// setting is a resource string read: an amount or a percent, and other resource types.
type setting struct {
	amount  Resources
	percent *Percent
	others  []string
}

// parseSetting reads the forms; percentages only when limit.
func parseSetting(s string, limit bool) (setting, error) {
	t := strings.TrimSpace(s)
	if v, ok := strings.CutSuffix(t, "%"); ok && !strings.ContainsAny(v, ",=") {
		if !limit {
			return setting{}, fmt.Errorf("%w: a percentage is a limit, allowed in maxResources only, got %q", ErrBadResources, s)
		}
		p, err := percentOf(v, s)
		if err != nil {
			return setting{}, err
		}
		return setting{percent: &Percent{Memory: p, CPU: p}}, nil
	}
	if strings.Contains(t, "=") {
		return parseNewForm(s, limit)
	}
	return parseOldForm(s, limit)
}

// parseOldForm reads "X mb, Y vcores" or, for a limit, "X% memory, Y% cpu".
func parseOldForm(s string, limit bool) (setting, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return setting{}, fmt.Errorf("%w, got %q", ErrBadResources, s)
	}
	var mem, cpu int64
	var memPct, cpuPct float64
	var haveMem, haveCPU, pct, abs bool
	for _, part := range parts {
		p := strings.ToLower(strings.TrimSpace(part))
		var unit string
		switch {
		case strings.HasSuffix(p, "vcores"):
			unit, p = "vcores", strings.TrimSuffix(p, "vcores")
		case strings.HasSuffix(p, "mb"):
			unit, p = "mb", strings.TrimSuffix(p, "mb")
		case strings.HasSuffix(p, "memory"):
			unit, p = "memory", strings.TrimSuffix(p, "memory")
		case strings.HasSuffix(p, "cpu"):
			unit, p = "cpu", strings.TrimSuffix(p, "cpu")
		default:
			return setting{}, fmt.Errorf("%w: %q has no unit (mb or vcores)", ErrBadResources, strings.TrimSpace(part))
		}
		p = strings.TrimSpace(p)
		isMem := unit == "mb" || unit == "memory"
		if isMem && haveMem || !isMem && haveCPU {
			return setting{}, fmt.Errorf("%w: %s is given twice in %q", ErrBadResources, unit, s)
		}
		if unit == "memory" || unit == "cpu" {
			v, ok := strings.CutSuffix(p, "%")
			if !ok {
				return setting{}, fmt.Errorf("%w: %q: memory and cpu take a percentage (50%% memory), mb and vcores an amount", ErrBadResources, strings.TrimSpace(part))
			}
			if !limit {
				return setting{}, fmt.Errorf("%w: a percentage is a limit, allowed in maxResources only, got %q", ErrBadResources, s)
			}
			x, err := percentOf(strings.TrimSpace(v), s)
			if err != nil {
				return setting{}, err
			}
			pct = true
			if isMem {
				memPct, haveMem = x, true
			} else {
				cpuPct, haveCPU = x, true
			}
			continue
		}
		n, err := wholeAmount(p, unit, part)
		if err != nil {
			return setting{}, err
		}
		abs = true
		if isMem {
			mem, haveMem = n, true
		} else {
			cpu, haveCPU = n, true
		}
	}
	if pct && abs {
		return setting{}, fmt.Errorf("%w: %q mixes amounts and percentages", ErrBadResources, s)
	}
	if pct {
		return setting{percent: &Percent{Memory: memPct, CPU: cpuPct}}, nil
	}
	return setting{amount: MBVCores(mem, cpu)}, nil
}

// parseNewForm reads "memory-mb=X, vcores=Y" (Hadoop 3), percentages for a limit.
func parseNewForm(s string, limit bool) (setting, error) {
	var out setting
	var mem, cpu *int64
	var memPct, cpuPct *float64
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return setting{}, fmt.Errorf("%w: %q is not name=value", ErrBadResources, strings.TrimSpace(part))
		}
		if seen[name] {
			return setting{}, fmt.Errorf("%w: %s is given twice in %q", ErrBadResources, name, s)
		}
		seen[name] = true
		v, isPct := strings.CutSuffix(value, "%")
		if isPct && !limit {
			return setting{}, fmt.Errorf("%w: a percentage is a limit, allowed in maxResources only, got %q", ErrBadResources, s)
		}
		if isPct {
			x, err := percentOf(strings.TrimSpace(v), s)
			if err != nil {
				return setting{}, err
			}
			switch name {
			case "memory-mb":
				memPct = &x
			case "vcores":
				cpuPct = &x
			}
		} else {
			switch name {
			case "memory-mb", "vcores":
				unit := map[string]string{"memory-mb": "mb", "vcores": "vcores"}[name]
				n, err := wholeAmount(v, unit, part)
				if err != nil {
					return setting{}, err
				}
				if name == "memory-mb" {
					mem = &n
				} else {
					cpu = &n
				}
			default: // another resource type: its value must still be an amount
				if _, err := strconv.ParseUint(v, 10, 63); err != nil {
					return setting{}, fmt.Errorf("%w: %q is not a whole, non-negative amount", ErrBadResources, strings.TrimSpace(part))
				}
			}
		}
		if name != "memory-mb" && name != "vcores" {
			if !validResourceName(name) {
				return setting{}, fmt.Errorf("%w: %q is not a resource name", ErrBadResources, name)
			}
			if meant := memoryOrCPU(name); meant != "" {
				return setting{}, fmt.Errorf("%w: %q is not a resource type; did you mean %s?", ErrBadResources, name, meant)
			}
			out.others = append(out.others, name)
		}
	}
	pct := memPct != nil || cpuPct != nil
	if pct && (mem != nil || cpu != nil) {
		return setting{}, fmt.Errorf("%w: %q mixes amounts and percentages", ErrBadResources, s)
	}
	if pct {
		p := Percent{Memory: 100, CPU: 100}
		if memPct != nil {
			p.Memory = *memPct
		}
		if cpuPct != nil {
			p.CPU = *cpuPct
		}
		out.percent = &p
		return out, nil
	}
	// A resource left out: none for an amount, no limit for a limit.
	m, c := int64(0), int64(0)
	if limit {
		m, c = maxMB, maxVCores
	}
	if mem != nil {
		m = *mem
	}
	if cpu != nil {
		c = *cpu
	}
	out.amount = MBVCores(m, c)
	return out, nil
}

// memoryOrCPU is the name a resource name most likely meant when it is a misspelling of
// memory-mb or vcores ("memory", "mem", "cpu", "vcore", …), else "". The Fair Scheduler
// refuses every name that is not a declared resource type; slotplane cannot know the
// cluster's declared types, so it lists the others as ignored, but one of these would
// leave memory or cpu unset without a word.
func memoryOrCPU(name string) string {
	n := strings.ToLower(name)
	if strings.Contains(n, "/") {
		return "" // a namespaced type, such as yarn.io/gpu
	}
	switch {
	case strings.HasPrefix(n, "mem"):
		return "memory-mb"
	case strings.HasPrefix(n, "cpu"), strings.HasPrefix(n, "vcore"), strings.HasPrefix(n, "v-core"), strings.HasPrefix(n, "core"):
		return "vcores"
	}
	return ""
}

// validResourceName: a YARN resource type name, such as yarn.io/gpu.
func validResourceName(name string) bool {
	if len(name) > 253 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._/", r)) {
			return false
		}
	}
	return true
}

// wholeAmount reads a whole, non-negative amount of unit (mb or vcores) within the bounds.
func wholeAmount(v, unit, part string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q is not a whole, non-negative amount", ErrBadResources, strings.TrimSpace(part))
	}
	if unit == "mb" && n > maxMB || unit == "vcores" && n > maxVCores {
		return 0, fmt.Errorf("%w: %q is more than the queues count", ErrBadResources, strings.TrimSpace(part))
	}
	return n, nil
}

// percentOf reads a percentage between 0 and 100.
func percentOf(v, s string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || x < 0 || x > 100 || x != x {
		return 0, fmt.Errorf("%w: %q: a percentage is a number from 0 to 100", ErrBadResources, s)
	}
	return x, nil
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
