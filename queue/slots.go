package queue

import "slices"

// slotSet is a set of slots: a flag per slot number below denseSlots (a bed's slots are
// numbered from 0), a map above. A decision reads the held slots of a full bed of thousands:
// a map of them would cost more than the rest of the decision.
type slotSet struct {
	dense  []bool
	sparse map[int32]bool
}

const denseSlots = 1 << 20

func (s *slotSet) add(p int32) {
	if p < 0 || p >= denseSlots {
		if s.sparse == nil {
			s.sparse = map[int32]bool{}
		}
		s.sparse[p] = true
		return
	}
	if int(p) >= len(s.dense) {
		n := max(int(p)+1, 2*len(s.dense))
		s.dense = slices.Grow(s.dense, n-len(s.dense))[:n]
	}
	s.dense[p] = true
}

func (s slotSet) has(p int32) bool {
	if p < 0 || p >= denseSlots {
		return s.sparse[p]
	}
	return int(p) < len(s.dense) && s.dense[p]
}

func setOf(ps []int32) map[int32]bool {
	out := make(map[int32]bool, len(ps))
	for _, p := range ps {
		out[p] = true
	}
	return out
}

// fits: the entry can start on the available slots.
func fits(e *Entry, avail []int32) bool {
	if e.slotBased() {
		return len(missing(e.Request.SlotIDs, avail)) == 0
	}
	return e.wanted() <= int64(len(avail))
}

// missing lists what of want is not in have, which is sorted.
func missing(want, have []int32) []int32 {
	var out []int32
	for _, w := range want {
		if !has(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// hasAll: every one of want is in sorted.
func hasAll(sorted, want []int32) bool {
	for _, w := range want {
		if !has(sorted, w) {
			return false
		}
	}
	return true
}

// has: p is in sorted.
func has(sorted []int32, p int32) bool {
	_, ok := slices.BinarySearch(sorted, p)
	return ok
}
