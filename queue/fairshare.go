package queue

import "math"

// Claim is what one queue brings to a split of its parent's share: its weight and the least
// and most it may get. For the steady fair share the most is its maxResources; for the
// instantaneous one, also no more than it asks for (its demand).
type Claim struct {
	Weight   float64
	Min, Max Resources
}

// maxShareIterations bounds the search for the ratio. The Fair Scheduler stops after 25
// halvings, which is fine in mb; in bytes it leaves shares some kilobytes over, adding up to
// more than the total. So the search here goes on until every share is exact to the byte or
// millicore, which takes about as many halvings as the total has bits.
const maxShareIterations = 100

// ComputeShares splits total among claims the Fair Scheduler's way, for memory and cpu
// each: every claim gets weight x R clamped to [Min, Max], with one ratio R for all, chosen
// so that the shares add up to total (or every claim is at its Max). Minimums come first:
// when they alone exceed total, each still gets its Min, as in the Fair Scheduler.
func ComputeShares(claims []Claim, total Resources) []Resources {
	out := make([]Resources, len(claims))
	mem := computeOne(claims, total.MemoryBytes, func(r Resources) int64 { return r.MemoryBytes })
	cpu := computeOne(claims, total.MilliCores, func(r Resources) int64 { return r.MilliCores })
	for i := range claims {
		out[i] = Resources{MemoryBytes: mem[i], MilliCores: cpu[i]}
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
	var weights float64
	for _, c := range claims {
		weights += max(c.Weight, 0)
	}
	// Find an upper bound for the ratio, then bisect. The doubling goes to total/weights
	// without a pass over the claims (in bytes the ratio runs to billions): a bound that is
	// higher than needed is still a bound, as what the claims use only grows with the ratio.
	hi := 1.0
	for weights > 0 && hi*weights < target {
		hi *= 2
	}
	for used(hi) < target && hi < 1e18 {
		hi *= 2
	}
	// Each claim moves at most its weight per unit of ratio, so once the ratio is known to
	// within 1/(sum of weights) every share, and their sum, is within one unit of exact.
	lo := 0.0
	for range maxShareIterations {
		mid := (lo + hi) / 2
		if (hi-lo)*weights < 1 || mid == lo || mid == hi {
			break // exact enough, or as exact as a float64 gets
		}
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
