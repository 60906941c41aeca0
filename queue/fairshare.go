package queue

import "math"

// Claim is what one queue brings to a split of its parent's share: its weight and the least
// and most it may get. For the steady fair share the most is its maxResources; for the
// instantaneous one, also no more than it asks for (its demand).
type Claim struct {
	Weight   float64
	Min, Max Resources
}

// shareIterations is how far the search for the ratio goes (the Fair Scheduler uses 25).
const shareIterations = 25

// ComputeShares splits total among claims the Fair Scheduler's way, for memory and vcores
// each: every claim gets weight x R clamped to [Min, Max], with one ratio R for all, chosen
// so that the shares add up to total (or every claim is at its Max). Minimums come first:
// when they alone exceed total, each still gets its Min, as in the Fair Scheduler.
func ComputeShares(claims []Claim, total Resources) []Resources {
	out := make([]Resources, len(claims))
	mem := computeOne(claims, total.MemoryMB, func(r Resources) int64 { return r.MemoryMB })
	cpu := computeOne(claims, total.VCores, func(r Resources) int64 { return r.VCores })
	for i := range claims {
		out[i] = Resources{MemoryMB: mem[i], VCores: cpu[i]}
	}
	return out
}

func computeOne(claims []Claim, total int64, of func(Resources) int64) []int64 {
	out := make([]int64, len(claims))
	if len(claims) == 0 {
		return out
	}
	clamp := func(c Claim, ratio float64) float64 {
		v := c.Weight * ratio
		lo, hi := float64(of(c.Min)), float64(of(c.Max))
		return math.Max(lo, math.Min(v, hi))
	}
	used := func(ratio float64) float64 {
		var sum float64
		for _, c := range claims {
			sum += clamp(c, ratio)
		}
		return sum
	}
	// Everyone at their most fits: nothing to share out.
	var most float64
	for _, c := range claims {
		most += float64(max(of(c.Max), of(c.Min)))
	}
	target := float64(total)
	if most <= target {
		for i, c := range claims {
			out[i] = max(of(c.Max), of(c.Min))
		}
		return out
	}
	// Find an upper bound for the ratio, then bisect.
	hi := 1.0
	for used(hi) < target && hi < 1e18 {
		hi *= 2
	}
	lo := 0.0
	for range shareIterations {
		mid := (lo + hi) / 2
		if used(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	for i, c := range claims {
		out[i] = int64(clamp(c, hi))
	}
	return out
}
