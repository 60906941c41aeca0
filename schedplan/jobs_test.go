package schedplan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// A grant starts a job that waits for it, fails one Admission refused, and otherwise
// changes nothing or goes back to Admission: a repeat of the grant the job runs on, a late
// copy of one the job gave back, a refusal of a job that does not wait, a grant of another
// run or of no job here.
func TestJudge(t *testing.T) {
	waiting := &Job{Job: named("a")}
	gaveBack := &Job{Job: named("a"), GaveBack: 7}
	running := &Job{Job: named("a"), Run: 1, State: v1alpha1.JobRunning, Grant: 3}
	ended := &Job{Job: named("a"), Run: 1, State: v1alpha1.JobCompleted}
	failedWaiting := &Job{Job: named("a"), State: v1alpha1.JobFailed}
	for _, c := range []struct {
		name string
		job  *Job
		g    Grant
		want Verdict
	}{
		{"the grant it waits for", waiting, Grant{Current: true, Seq: 1}, Take},
		{"a restored grant, without a number", waiting, Grant{Current: true}, Take},
		{"a refusal of a job that waits", waiting, Grant{Current: true, Seq: 1, Refused: true}, Refuse},
		{"a late copy of the grant it gave back", gaveBack, Grant{Current: true, Seq: 7}, Ignore},
		{"an older grant than the one it gave back", gaveBack, Grant{Current: true, Seq: 5}, Ignore},
		{"a grant after the one it gave back", gaveBack, Grant{Current: true, Seq: 8}, Take},
		{"a repeat of the grant it runs on", running, Grant{Current: true, Seq: 3}, Ignore},
		{"a grant of a job that ended", ended, Grant{Current: true, Seq: 4}, Release},
		{"a grant of a job that failed before it ran", failedWaiting, Grant{Current: true, Seq: 4}, Release},
		{"a grant of another run", waiting, Grant{Seq: 1}, Release},
		{"a grant of no job here", nil, Grant{Seq: 1}, Release},
		{"a refusal of no job here", nil, Grant{Seq: 1, Refused: true}, Ignore},
		{"a refusal of a job that runs", running, Grant{Current: true, Seq: 9, Refused: true}, Ignore},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Judge(c.job, c.g))
		})
	}
}

// Taking a grant starts run 1 in its slots; giving it back makes the job wait again,
// remembering the grant, so that a late copy of it is known.
func TestJob_TakeAndGiveBack(t *testing.T) {
	at := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	j := &Job{Job: named("a")}
	j.Take([]int32{3, 4}, 12, at)
	require.Equal(t, &Job{Job: named("a"), Run: 1, Slots: []int32{3, 4}, RequestedAt: at, Grant: 12}, j)
	require.True(t, j.Active())
	require.False(t, j.Waiting())

	j.GiveBack("slot 4 left the test bed")
	require.Equal(t, &Job{Job: named("a"), GaveBack: 12, Message: "waiting again: slot 4 left the test bed"}, j)
	require.True(t, j.Waiting())
	require.Equal(t, Ignore, Judge(j, Grant{Current: true, Seq: 12}))
}

// A report sets the job's state, message and times until the job ended; after that, late
// or repeated reports change nothing.
func TestJob_Apply(t *testing.T) {
	at := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	j := &Job{Job: named("a"), Run: 1}
	j.Apply(Report{State: v1alpha1.JobRunning, Message: "every pod runs", SubmittedAt: at, RunningAt: at.Add(time.Second)})
	require.Equal(t, v1alpha1.JobRunning, j.State)
	require.Equal(t, at.Add(time.Second), j.RunningAt)
	j.Apply(Report{State: v1alpha1.JobCompleted, Message: "done", SubmittedAt: at, RunningAt: at.Add(time.Second), FinishedAt: at.Add(time.Minute)})
	require.True(t, j.Done())
	require.False(t, j.Active())
	j.Apply(Report{State: v1alpha1.JobRunning, Message: "a late report"})
	require.Equal(t, v1alpha1.JobCompleted, j.State)
	require.Equal(t, "done", j.Message)
	require.Equal(t, at.Add(time.Minute), j.FinishedAt)
}

// The queue's views: which jobs wait, whether all ended, how many failed, which of a new
// list are new.
func TestJobs_Views(t *testing.T) {
	q := Jobs{
		{Job: named("a"), Run: 1, State: v1alpha1.JobCompleted},
		{Job: named("b"), Run: 1, State: v1alpha1.JobRunning},
		{Job: named("c")},
		{Job: named("d"), State: v1alpha1.JobFailed},
		{Job: named("e"), State: v1alpha1.JobInQueue},
	}
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, q.Names())
	require.Equal(t, []string{"c", "e"}, q.Waiting().Names())
	require.True(t, q.AnyWaiting())
	require.False(t, q.AllDone())
	require.Equal(t, 1, q.Failed())
	require.Same(t, q[2], q.Find("c"))
	require.Nil(t, q.Find("z"))
	require.Equal(t, []v1alpha1.SchedulingJob{named("f")}, q.Added([]v1alpha1.SchedulingJob{named("a"), named("f"), named("c")}))
	require.True(t, Jobs{q[0], q[3]}.AllDone())
	require.False(t, Jobs{q[0], q[3]}.AnyWaiting())
	require.True(t, Jobs{}.AllDone())
}

// An extension keeps every queued job, passes the schema's rules, and comes while the
// Scheduling still takes jobs.
func TestJobs_ValidateExtend(t *testing.T) {
	q := Jobs{{Job: named("a")}, {Job: named("b")}}
	for _, c := range []struct {
		name  string
		state v1alpha1.SchedulingState
		list  []v1alpha1.SchedulingJob
		want  string
	}{
		{"one more job", v1alpha1.SchedulingScheduling, []v1alpha1.SchedulingJob{named("a"), named("b"), named("c")}, ""},
		{"while it acquires", v1alpha1.SchedulingAcquiring, []v1alpha1.SchedulingJob{named("a"), named("b"), named("c")}, ""},
		{"a queued job removed", v1alpha1.SchedulingScheduling, []v1alpha1.SchedulingJob{named("a"), named("c")}, "job b is queued already and cannot be removed"},
		{"an ended Scheduling", v1alpha1.SchedulingCompleted, []v1alpha1.SchedulingJob{named("a"), named("b"), named("c")}, "the scheduling is Completed and takes no more jobs"},
		{"a job twice", v1alpha1.SchedulingScheduling, []v1alpha1.SchedulingJob{named("a"), named("b"), named("a")}, "Duplicate value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := q.ValidateExtend(v1alpha1.QueueBased, c.state, c.list)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Admission hears once that a run left Starting (a run reported Running left it too), and
// hears of its end; nothing when the job's workflow told it itself, or when the report is of
// another run.
func TestJobs_Heard(t *testing.T) {
	for _, c := range []struct {
		name          string
		r             Report
		run           int32
		told          bool
		started, ends int
	}{
		{"left Starting", Report{State: v1alpha1.JobSubmitted, Started: true}, 1, false, 1, 0},
		{"Running says it left Starting", Report{State: v1alpha1.JobRunning}, 1, false, 1, 0},
		{"still starting", Report{State: v1alpha1.JobSubmitted}, 1, false, 0, 0},
		{"ended at once", Report{State: v1alpha1.JobCompleted}, 1, false, 0, 1},
		{"the job's workflow told", Report{State: v1alpha1.JobRunning, Started: true}, 1, true, 0, 0},
		{"the job's workflow told the end", Report{State: v1alpha1.JobFailed}, 1, true, 0, 0},
		{"another run", Report{State: v1alpha1.JobRunning, Started: true}, 2, false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := Jobs{{Job: named("a"), Run: 1, State: v1alpha1.JobSubmitted}, {Job: named("b"), Run: 1}}
			started, ended := q.Heard("a", c.run, c.r, c.told)
			require.Len(t, started, c.started)
			require.Len(t, ended, c.ends)
			if c.run == 1 {
				require.Equal(t, c.r.State, q[0].State, "the report is applied")
				require.Equal(t, c.r.Started || c.r.State == v1alpha1.JobRunning, q[0].Started)
			}
		})
	}
	// Once per run: the next report of a run that left Starting tells nothing more.
	q := Jobs{{Job: named("a"), Run: 1}}
	started, _ := q.Heard("a", 1, Report{State: v1alpha1.JobSubmitted, Started: true}, false)
	require.Len(t, started, 1)
	started, _ = q.Heard("a", 1, Report{State: v1alpha1.JobRunning}, false)
	require.Empty(t, started)
}

// A run taken up from the cluster: granted but not started waits for its start; started,
// it has its status's state and times.
func TestJob_Resume(t *testing.T) {
	granted := metav1.NewMicroTime(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
	idle := &Job{Job: named("a"), State: v1alpha1.JobInQueue}
	require.False(t, idle.Resume([]int32{1}, &granted, Report{}))
	require.Equal(t, int32(1), idle.Run)
	require.Equal(t, []int32{1}, idle.Slots)
	require.True(t, idle.RequestedAt.Equal(granted.Time))
	require.Equal(t, v1alpha1.JobInQueue, idle.State)

	ran := &Job{Job: named("b"), State: v1alpha1.JobInQueue}
	require.True(t, ran.Resume([]int32{2, 3}, nil, Report{State: v1alpha1.JobCompleted, Message: "done", FinishedAt: granted.Add(time.Minute)}))
	require.True(t, ran.Done())
	require.True(t, ran.RequestedAt.IsZero(), "no grant time known")
	require.Equal(t, granted.Add(time.Minute), ran.FinishedAt)
}

// TestBedFound says whether the bed exists; its transition time moves only when the
// status does.
func TestTestBedFound(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 500, time.UTC)
	st := &v1alpha1.SchedulingStatus{}
	TestBedFound(st, "bed", false, t0)
	require.Len(t, st.Conditions, 1)
	require.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	require.Equal(t, "test bed bed does not exist; the jobs wait for it", st.Conditions[0].Message)
	require.True(t, st.Conditions[0].LastTransitionTime.Time.Equal(t0.Truncate(time.Second)))
	TestBedFound(st, "bed", false, t0.Add(time.Hour))
	require.True(t, st.Conditions[0].LastTransitionTime.Time.Equal(t0.Truncate(time.Second)), "no change, no transition")
	TestBedFound(st, "bed", true, t0.Add(2*time.Hour))
	require.Len(t, st.Conditions, 1)
	require.Equal(t, metav1.ConditionTrue, st.Conditions[0].Status)
	require.Equal(t, "TestBedExists", st.Conditions[0].Reason)
	require.True(t, st.Conditions[0].LastTransitionTime.Time.Equal(t0.Add(2*time.Hour).Truncate(time.Second)))
}
