package bridge

import (
	"context"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/testobjects"
)

// The BatchJob's workflow is signalled for what only the bridge sees, and not again for
// what a Scheduling writes and signals itself (a claim, a creation request and its test
// bed's label, which the bed takes off once the run ended) or for the workflow's own status
// writes, the end of a run among them.
func TestJobChanges_OneSignalPerChange(t *testing.T) {
	base := testobjects.BatchJob("wordcount").Obj()
	base.Generation = 1
	base.Labels = map[string]string{"team": "a"}
	change := func(edit func(j *v1alpha1.BatchJob)) *v1alpha1.BatchJob {
		j := base.DeepCopy()
		edit(j)
		return j
	}
	now := metav1.Now()
	cases := map[string]struct {
		after *v1alpha1.BatchJob
		pass  bool
	}{
		"a claim": {change(func(j *v1alpha1.BatchJob) { j.Labels[v1alpha1.ActiveSchedulingLabel] = "nightly" }), false},
		"a creation request": {change(func(j *v1alpha1.BatchJob) {
			j.Annotations = map[string]string{v1alpha1.CreationRequestAnnotation: "{}"}
		}), false},
		"a granted test bed":     {change(func(j *v1alpha1.BatchJob) { j.Labels[v1alpha1.GrantedTestBedLabel] = "bed" }), false},
		"a status write":         {change(func(j *v1alpha1.BatchJob) { j.Status.State = v1alpha1.JobRunning }), false},
		"the end of a run":       {change(func(j *v1alpha1.BatchJob) { j.Status.State = v1alpha1.JobCompleted }), false},
		"a spec edit":            {change(func(j *v1alpha1.BatchJob) { j.Generation = 2 }), true},
		"a label of the user":    {change(func(j *v1alpha1.BatchJob) { j.Labels["team"] = "b" }), true},
		"an assigned-slots note": {change(func(j *v1alpha1.BatchJob) { j.Annotations = map[string]string{v1alpha1.AssignedSlotsAnnotation: "1,2"} }), true},
		"a deletion":             {change(func(j *v1alpha1.BatchJob) { j.DeletionTimestamp = &now }), true},
		"a finalizer":            {change(func(j *v1alpha1.BatchJob) { j.Finalizers = []string{"x"} }), true},
	}
	for name, tc := range cases {
		if got := jobChanges().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.after}); got != tc.pass {
			t.Errorf("%s: passed %v, want %v", name, got, tc.pass)
		}
	}
	if !jobChanges().Create(event.CreateEvent{Object: base}) || !jobChanges().Delete(event.DeleteEvent{Object: base}) {
		t.Error("a new or deleted job must reach its workflow")
	}
}

// The test bed hears of the end of a run once: the status's coming to Completed or Failed,
// not a later write of the ended status, a new or deleted job, or any other change.
func TestRunEnds_TheEndOfARunOnce(t *testing.T) {
	running := testobjects.BatchJob("wordcount").Obj()
	running.Status.State = v1alpha1.JobRunning
	with := func(st v1alpha1.BatchJobState) *v1alpha1.BatchJob {
		j := running.DeepCopy()
		j.Status.State = st
		return j
	}
	cases := []struct {
		what          string
		before, after *v1alpha1.BatchJob
		pass          bool
	}{
		{"running to completed", running, with(v1alpha1.JobCompleted), true},
		{"running to failed", running, with(v1alpha1.JobFailed), true},
		{"submitted to running", with(v1alpha1.JobSubmitted), running, false},
		{"completed written again", with(v1alpha1.JobCompleted), with(v1alpha1.JobCompleted), false},
		{"a new run", with(v1alpha1.JobCompleted), with(v1alpha1.JobInQueue), false},
	}
	for _, tc := range cases {
		if got := runEnds().Update(event.UpdateEvent{ObjectOld: tc.before, ObjectNew: tc.after}); got != tc.pass {
			t.Errorf("%s: passed %v, want %v", tc.what, got, tc.pass)
		}
	}
	if runEnds().Create(event.CreateEvent{Object: running}) || runEnds().Delete(event.DeleteEvent{Object: running}) {
		t.Error("a new or deleted job is no end of a run")
	}
}

// An ended run is told to the test bed its creation request names, in that bed's queue; a
// job with no request, or one that does not parse or names no bed, tells nobody.
func TestEndedRunsBed_TheBedOfTheRequest(t *testing.T) {
	job := func(request string) *v1alpha1.BatchJob {
		j := testobjects.BatchJob("wordcount").Obj()
		if request != "" {
			j.Annotations = map[string]string{v1alpha1.CreationRequestAnnotation: request}
		}
		return j
	}
	got := endedRunsBed(context.Background(), job(`{"scheduling":"nightly","testBed":"bed","slots":[3],"run":1,"grantedAt":"2026-12-05T00:00:00.000000Z"}`))
	want := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "default", Name: "bed"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, request := range []string{"", "{not json", `{"scheduling":"nightly"}`} {
		if got := endedRunsBed(context.Background(), job(request)); got != nil {
			t.Errorf("request %q: told %v", request, got)
		}
	}
}

// A refusal noted for the current generation stops the bridge asking again; a later edit
// (a new generation) is asked.
func TestRefusedAlready(t *testing.T) {
	s := &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	if refusedAlready(s) {
		t.Fatal("no note, no refusal")
	}
	s.Annotations = map[string]string{v1alpha1.ExtendRefusedAnnotation: "3: job x is held by Scheduling other"}
	if !refusedAlready(s) {
		t.Fatal("generation 3 was refused")
	}
	s.Generation = 4
	if refusedAlready(s) {
		t.Fatal("generation 4 is a new list")
	}
}
