package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mb is n MiB of memory and no cpu: the cases below split memory.
func mb(n int64) Resources { return MBVCores(n, 0) }

var unlimited = MBVCores(1<<40, 1<<40)

func TestComputeShares(t *testing.T) {
	cases := map[string]struct {
		claims []Claim
		total  Resources
		want   []int64 // memory, in mb
	}{
		"weights 2 and 1 split 12 slots 8/4": {
			[]Claim{{Weight: 2, Max: unlimited}, {Weight: 1, Max: unlimited}}, mb(12 * 1024), []int64{8 * 1024, 4 * 1024},
		},
		"a minimum is met first": {
			[]Claim{{Weight: 1, Min: mb(6000), Max: unlimited}, {Weight: 1, Max: unlimited}}, mb(10000), []int64{6000, 4000},
		},
		"a small demand caps a share, the rest goes on": {
			[]Claim{{Weight: 1, Max: mb(2000)}, {Weight: 1, Max: unlimited}}, mb(10000), []int64{2000, 8000},
		},
		"everyone at their most when it fits": {
			[]Claim{{Weight: 1, Max: mb(2000)}, {Weight: 5, Max: mb(3000)}}, mb(10000), []int64{2000, 3000},
		},
		"weight zero gets its minimum only": {
			[]Claim{{Weight: 0, Min: mb(1000), Max: unlimited}, {Weight: 1, Max: unlimited}}, mb(10000), []int64{1000, 9000},
		},
		"minimums beyond the total are each still met": {
			[]Claim{{Weight: 1, Min: mb(7000), Max: unlimited}, {Weight: 1, Min: mb(7000), Max: unlimited}}, mb(10000), []int64{7000, 7000},
		},
		"three equal": {
			[]Claim{{Weight: 1, Max: unlimited}, {Weight: 1, Max: unlimited}, {Weight: 1, Max: unlimited}}, mb(9000), []int64{3000, 3000, 3000},
		},
		"nobody": {nil, mb(100), []int64{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ComputeShares(tc.claims, tc.total)
			want, mem := make([]int64, len(got)), make([]int64, len(got))
			for i, r := range got {
				want[i], mem[i] = tc.want[i]*mib, r.MemoryBytes // to the byte
			}
			if diff := cmp.Diff(want, mem); diff != "" {
				t.Errorf("memory shares in bytes (-want +got)\n%s", diff)
			}
		})
	}
}

// Shares never add up to more than the total unless minimums force it, and each lies in
// its claim's bounds.
func TestComputeShares_Bounds(t *testing.T) {
	claims := []Claim{
		{Weight: 3, Min: MBVCores(1000, 1), Max: MBVCores(50000, 40)},
		{Weight: 1, Max: MBVCores(4000, 2)},
		{Weight: 0.5, Min: MBVCores(2000, 0), Max: unlimited},
		{Weight: 2, Max: MBVCores(30000, 10)},
	}
	total := MBVCores(64000, 32)
	got := ComputeShares(claims, total)
	var sum Resources
	for i, r := range got {
		c := claims[i]
		if !c.Min.Fits(r) || !r.Fits(c.Max) {
			t.Errorf("share %d = %v outside [%v, %v]", i, r, c.Min, c.Max)
		}
		sum = sum.Add(r)
	}
	if !sum.Fits(total) {
		t.Errorf("shares %v add up to %v, over %v", got, sum, total)
	}
	if total.MemoryBytes-sum.MemoryBytes > int64(len(claims)) || total.MilliCores-sum.MilliCores > int64(len(claims)) {
		t.Errorf("shares %v leave %v unshared", got, total.Sub(sum))
	}
}

func BenchmarkComputeShares1000Queues(b *testing.B) {
	claims := make([]Claim, 1000)
	for i := range claims {
		claims[i] = Claim{Weight: float64(1 + i%5), Min: MBVCores(int64(i%7)*100, 0), Max: MBVCores(int64(1000+i*37), int64(1+i%9))}
	}
	total := MBVCores(2_000_000, 4000)
	b.ReportAllocs()
	for b.Loop() {
		ComputeShares(claims, total)
	}
}
