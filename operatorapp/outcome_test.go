package operatorapp

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
)

// end is what an outcome table expects: not an end, a success, a failure, or a suspension
// (whose success is the job's suspendedOutcome).
type end int

const (
	going end = iota
	success
	failure
	suspension
)

func (e end) check(t *testing.T, what string, o Outcome, suspendedFails bool) {
	t.Helper()
	want := Outcome{Terminal: e != going, Succeeded: e == success || e == suspension && !suspendedFails, Suspended: e == suspension}
	if o.Terminal != want.Terminal || o.Succeeded != want.Succeeded || o.Suspended != want.Suspended {
		t.Errorf("%s (suspendedOutcome Failed: %v): terminal %v succeeded %v suspended %v, want %v %v %v",
			what, suspendedFails, o.Terminal, o.Succeeded, o.Suspended, want.Terminal, want.Succeeded, want.Suspended)
	}
}

// The Spark operator's states, from its state machine with restart policy Never.
func TestSparkOutcome_EveryState(t *testing.T) {
	table := map[sparkv1beta2.ApplicationStateType]end{
		sparkv1beta2.ApplicationStateNew:              going,
		sparkv1beta2.ApplicationStateSubmitted:        going,
		sparkv1beta2.ApplicationStateRunning:          going,
		sparkv1beta2.ApplicationStateSucceeding:       success,
		sparkv1beta2.ApplicationStateFailing:          failure,
		sparkv1beta2.ApplicationStatePendingRerun:     going,
		sparkv1beta2.ApplicationStateInvalidating:     going,
		sparkv1beta2.ApplicationStateUnknown:          going,
		sparkv1beta2.ApplicationStateSuspending:       going,
		sparkv1beta2.ApplicationStateResuming:         going,
		sparkv1beta2.ApplicationStateCompleted:        success,
		sparkv1beta2.ApplicationStateFailed:           failure,
		sparkv1beta2.ApplicationStateFailedSubmission: failure,
		sparkv1beta2.ApplicationStateSuspended:        suspension,
		"SOMETHING_NEW":                               going,
	}
	for _, s := range sparkv1beta2.ApplicationStates {
		if _, ok := table[s]; !ok {
			t.Errorf("state %q of the Spark types is not in the table", s)
		}
	}
	for state, want := range table {
		for _, fails := range []bool{false, true} {
			app := &sparkv1beta2.SparkApplication{}
			if fails {
				app.Annotations = map[string]string{v1alpha1.SuspendedOutcomeAnnotation: string(v1alpha1.RunFailed)}
			}
			app.Status.AppState = sparkv1beta2.ApplicationState{State: state, ErrorMessage: "why"}
			o := SparkOutcome(app)
			want.check(t, string(state), o, fails)
			if o.State != string(state) || o.Message != "why" {
				t.Errorf("%s: state %q message %q", state, o.State, o.Message)
			}
		}
	}
}

// SUCCEEDING and FAILING are ends only where the operator cannot run the application again:
// restart policy Never or none. Under OnFailure or Always it may go PENDING_RERUN instead.
func TestSparkOutcome_DriverEndedIsAnEndOnlyWithoutReruns(t *testing.T) {
	for _, policy := range []sparkv1beta2.RestartPolicyType{"", sparkv1beta2.RestartPolicyNever, sparkv1beta2.RestartPolicyOnFailure, sparkv1beta2.RestartPolicyAlways} {
		for state, want := range map[sparkv1beta2.ApplicationStateType]end{sparkv1beta2.ApplicationStateSucceeding: success, sparkv1beta2.ApplicationStateFailing: failure} {
			app := &sparkv1beta2.SparkApplication{}
			app.Spec.RestartPolicy.Type = policy
			app.Status.AppState.State = state
			if policy == sparkv1beta2.RestartPolicyOnFailure || policy == sparkv1beta2.RestartPolicyAlways {
				want = going
			}
			want.check(t, fmt.Sprintf("%s under restart policy %q", state, policy), SparkOutcome(app), false)
		}
	}
}

// Every job state and lifecycle state the released FlinkDeployment CRD allows, alone and in
// the combinations the operator publishes.
func TestFlinkOutcome_EveryState(t *testing.T) {
	jobs := map[flinkv1beta1.FlinkJobState]end{
		"": going, flinkv1beta1.FlinkJobInitializing: going, flinkv1beta1.FlinkJobCreated: going, flinkv1beta1.FlinkJobRunning: going,
		flinkv1beta1.FlinkJobFailing: going, flinkv1beta1.FlinkJobRestarting: going, flinkv1beta1.FlinkJobCancelling: going,
		flinkv1beta1.FlinkJobReconciling: going, flinkv1beta1.FlinkJobSuspended: going,
		flinkv1beta1.FlinkJobFinished: success, flinkv1beta1.FlinkJobFailed: failure, flinkv1beta1.FlinkJobCanceled: failure,
	}
	lifecycles := map[flinkv1beta1.ResourceLifecycleState]end{
		"": going, flinkv1beta1.LifecycleStateCreated: going, flinkv1beta1.LifecycleStateDeployed: going, flinkv1beta1.LifecycleStateStable: going,
		flinkv1beta1.LifecycleStateUpgrading: going, flinkv1beta1.LifecycleStateRollingBack: going, flinkv1beta1.LifecycleStateRolledBack: going,
		flinkv1beta1.LifecycleStateDeleting:  going,
		flinkv1beta1.LifecycleStateSuspended: suspension, flinkv1beta1.LifecycleStateFailed: failure, flinkv1beta1.LifecycleStateDeleted: failure,
	}
	upstream := upstreamEnums(t, "../crds/testdata/flinkdeployment-v1beta1-flink-operator-1.15.0.paths")
	for _, s := range upstream[".status.jobStatus.state"] {
		if _, ok := jobs[flinkv1beta1.FlinkJobState(s)]; !ok {
			t.Errorf("job state %s of the released CRD is not in the table", s)
		}
	}
	for _, s := range upstream[".status.lifecycleState"] {
		if _, ok := lifecycles[flinkv1beta1.ResourceLifecycleState(s)]; !ok {
			t.Errorf("lifecycle state %s of the released CRD is not in the table", s)
		}
	}
	if len(upstream[".status.jobStatus.state"]) != 11 || len(upstream[".status.lifecycleState"]) != 10 {
		t.Fatalf("the released CRD's enums were not read: %v", upstream)
	}

	dep := func(job flinkv1beta1.FlinkJobState, life flinkv1beta1.ResourceLifecycleState, specSuspended, fails bool) *flinkv1beta1.FlinkDeployment {
		d := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{}}
		d.Spec.Job = &flinkv1beta1.JobSpec{State: flinkv1beta1.JobStateRunning}
		if specSuspended {
			d.Spec.Job.State = flinkv1beta1.JobStateSuspended
		}
		if fails {
			d.Annotations = map[string]string{v1alpha1.SuspendedOutcomeAnnotation: string(v1alpha1.RunFailed)}
		}
		d.Status.JobStatus.State, d.Status.LifecycleState, d.Status.Error = job, life, "why"
		return d
	}
	for _, fails := range []bool{false, true} {
		// Each job state under a lifecycle that decides nothing: the job's state decides.
		for job, want := range jobs {
			want.check(t, "job "+string(job)+", lifecycle STABLE", FlinkOutcome(dep(job, flinkv1beta1.LifecycleStateStable, false, fails)), fails)
		}
		// Each lifecycle state with a running job: the lifecycle decides.
		for life, want := range lifecycles {
			want.check(t, "job RUNNING, lifecycle "+string(life), FlinkOutcome(dep(flinkv1beta1.FlinkJobRunning, life, false, fails)), fails)
		}
		// A suspension as the operator publishes it: the job SUSPENDED (last-state, savepoint)
		// or CANCELED (stateless) with the lifecycle SUSPENDED.
		for _, job := range []flinkv1beta1.FlinkJobState{flinkv1beta1.FlinkJobSuspended, flinkv1beta1.FlinkJobCanceled, flinkv1beta1.FlinkJobFinished} {
			want := suspension
			if job == flinkv1beta1.FlinkJobFinished {
				want = success // a job that finished before the suspension took effect
			}
			want.check(t, "job "+string(job)+", lifecycle SUSPENDED", FlinkOutcome(dep(job, flinkv1beta1.LifecycleStateSuspended, true, fails)), fails)
		}
		// The job is suspended for a moment during an upgrade: not an end.
		going.check(t, "job SUSPENDED, lifecycle UPGRADING", FlinkOutcome(dep(flinkv1beta1.FlinkJobSuspended, flinkv1beta1.LifecycleStateUpgrading, false, fails)), fails)
		// An operator that publishes no lifecycle: the spec says whether it was suspended.
		suspension.check(t, "job SUSPENDED, no lifecycle, spec suspended", FlinkOutcome(dep(flinkv1beta1.FlinkJobSuspended, "", true, fails)), fails)
		going.check(t, "job SUSPENDED, no lifecycle, spec running", FlinkOutcome(dep(flinkv1beta1.FlinkJobSuspended, "", false, fails)), fails)
	}
	if o := FlinkOutcome(dep(flinkv1beta1.FlinkJobRunning, flinkv1beta1.LifecycleStateFailed, false, false)); o.State != "FAILED" || o.Message != "why" {
		t.Errorf("a failed lifecycle reads %q %q", o.State, o.Message)
	}
}

// upstreamEnums reads the enums of a flattened field table (crds/schemapaths' line form).
func upstreamEnums(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		for _, p := range parts[1:] {
			if values, ok := strings.CutPrefix(p, "enum="); ok {
				out[parts[0]] = strings.Split(values, "|")
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}
