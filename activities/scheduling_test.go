package activities

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

func TestApplyStatus(t *testing.T) {
	js := func(name string, st v1alpha1.BatchJobState) v1alpha1.SchedulingJobStatus {
		return v1alpha1.SchedulingJobStatus{Name: name, State: st}
	}
	current := v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling, TotalJobs: 2,
		Jobs: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobRunning), js("b", "")}}
	cases := map[string]struct {
		in   WriteSchedulingStatusInput
		want []v1alpha1.SchedulingJobStatus
		ok   bool
	}{
		"whole": {in: WriteSchedulingStatusInput{Status: v1alpha1.SchedulingStatus{TotalJobs: 1, Jobs: []v1alpha1.SchedulingJobStatus{js("z", "")}}},
			want: []v1alpha1.SchedulingJobStatus{js("z", "")}, ok: true},
		"a change in place": {in: WriteSchedulingStatusInput{Delta: true, Status: v1alpha1.SchedulingStatus{TotalJobs: 2, Jobs: []v1alpha1.SchedulingJobStatus{js("b", v1alpha1.JobSubmitted)}}},
			want: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobRunning), js("b", v1alpha1.JobSubmitted)}, ok: true},
		"appended jobs come last, in order": {in: WriteSchedulingStatusInput{Delta: true, Status: v1alpha1.SchedulingStatus{TotalJobs: 4,
			Jobs: []v1alpha1.SchedulingJobStatus{js("d", ""), js("a", v1alpha1.JobCompleted), js("c", "")}}},
			want: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobCompleted), js("b", ""), js("d", ""), js("c", "")}, ok: true},
		"out of step": {in: WriteSchedulingStatusInput{Delta: true, Status: v1alpha1.SchedulingStatus{TotalJobs: 5, Jobs: []v1alpha1.SchedulingJobStatus{js("c", "")}}},
			want: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobRunning), js("b", ""), js("c", "")}, ok: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ApplyStatus(current, tc.in)
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got.Jobs); diff != "" {
				t.Errorf("jobs (-want +got)\n%s", diff)
			}
			if got.TotalJobs != tc.in.Status.TotalJobs {
				t.Errorf("the counts are the write's: %d", got.TotalJobs)
			}
		})
	}
	if len(current.Jobs) != 2 || current.Jobs[0].State != v1alpha1.JobRunning {
		t.Errorf("the current status was changed: %+v", current.Jobs)
	}
}

// A status write claims the object's generation only when it tracks every job the spec
// lists: an extension the workflow has not taken stays unobserved, so the bridge passes it on.
func TestObservedGeneration_OnlyWhenEveryJobIsTracked(t *testing.T) {
	s := &v1alpha1.Scheduling{
		ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec:       v1alpha1.SchedulingSpec{Jobs: []v1alpha1.SchedulingJob{{Name: "a"}, {Name: "b"}}},
		Status:     v1alpha1.SchedulingStatus{ObservedGeneration: 1},
	}
	onlyA := v1alpha1.SchedulingStatus{Jobs: []v1alpha1.SchedulingJobStatus{{Name: "a"}}}
	if got := observedGeneration(s, onlyA); got != 1 {
		t.Errorf("b is not taken yet: observed %d, want 1", got)
	}
	both := v1alpha1.SchedulingStatus{Jobs: []v1alpha1.SchedulingJobStatus{{Name: "a"}, {Name: "b"}}}
	if got := observedGeneration(s, both); got != 2 {
		t.Errorf("both taken: observed %d, want 2", got)
	}
}
