package fifo

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slotplane/apitypes"
	"slotplane/schedkit"
)

func view(free []bool, waiting ...schedkit.Job) *schedkit.View {
	v := &schedkit.View{Now: time.Unix(1000, 0), Waiting: waiting}
	for i, f := range free {
		s := schedkit.Slot{Position: int32(i), Node: []string{"a", "b"}[i%2]}
		if !f {
			s.Job = "busy"
		}
		v.Slots = append(v.Slots, s)
	}
	return v
}

func job(name string, replicas int32) schedkit.Job {
	return schedkit.Job{Job: apitypes.Job{Name: name}, Replicas: replicas}
}

// The oldest jobs go first into the lowest free slots; the first that does not fit stops
// the rest, even a smaller one behind it; one larger than the bed is passed over.
func TestFIFO_NoJobOvertakesAnEarlierOne(t *testing.T) {
	free := []bool{true, false, true, true, true, false}
	cases := map[string]struct {
		waiting []schedkit.Job
		want    []schedkit.Placement
	}{
		"in order": {waiting: []schedkit.Job{job("a", 2), job("b", 1)},
			want: []schedkit.Placement{{Job: "a", Replicas: 2, Slots: []int32{0, 2}}, {Job: "b", Replicas: 1, Slots: []int32{3}}}},
		"the head waits, and the rest behind it": {waiting: []schedkit.Job{job("a", 3), job("big", 2), job("small", 1)},
			want: []schedkit.Placement{{Job: "a", Replicas: 3, Slots: []int32{0, 2, 3}}}},
		"larger than the bed": {waiting: []schedkit.Job{job("huge", 7), job("b", 1)},
			want: []schedkit.Placement{{Job: "b", Replicas: 1, Slots: []int32{0}}}},
		"nothing waits": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, New().Decide(view(free, tc.waiting...))); diff != "" {
				t.Errorf("placements (-want +got)\n%s", diff)
			}
		})
	}
}
