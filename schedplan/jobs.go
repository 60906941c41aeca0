package schedplan

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"slotplane/crds/v1alpha1"
)

// Job is one job of a Scheduling's queue as its workflow tracks it.
type Job struct {
	Job v1alpha1.SchedulingJob
	// State: "" (waiting), then the job's states as it reports them.
	State   v1alpha1.BatchJobState
	Slots   []int32
	Run     int32
	Message string
	// RequestedAt is when the Scheduling asked for the application.
	RequestedAt, SubmittedAt, RunningAt, FinishedAt time.Time
	// Started: Admission heard that the job left Starting (StateAware).
	Started bool
	// Grant is the number of the grant the job took (the grant's Seq); GaveBack that of the
	// last grant it gave back because its slots had left the test bed. A grant numbered
	// GaveBack or less that comes later is a late copy of one given back.
	Grant, GaveBack int64
}

// Active: the job was started and has not ended.
func (j *Job) Active() bool {
	return j.Run > 0 && !j.Done()
}

// Done: the job ended, Completed or Failed.
func (j *Job) Done() bool {
	return j.State.Ended()
}

// Waiting: the job was not started and has not ended.
func (j *Job) Waiting() bool {
	return j.Run == 0 && !j.Done()
}

// Fail ends the job Failed at the time at, with msg.
func (j *Job) Fail(msg string, at time.Time) {
	j.State, j.Message, j.FinishedAt = v1alpha1.JobFailed, v1alpha1.ClipMessage(msg), at
}

// Report is what a job's workflow tells of its run. Started: the application left
// StateAware's Starting state.
type Report struct {
	State                              v1alpha1.BatchJobState
	Message                            string
	SubmittedAt, RunningAt, FinishedAt time.Time
	Started                            bool
}

// Apply takes the report of the job's run; a late or repeated report of a job that ended
// changes nothing.
func (j *Job) Apply(r Report) {
	if j.Done() {
		return
	}
	j.State, j.Message = r.State, v1alpha1.ClipMessage(r.Message)
	j.SubmittedAt, j.RunningAt, j.FinishedAt = r.SubmittedAt, r.RunningAt, r.FinishedAt
}

// Jobs is a Scheduling's queue, in order.
type Jobs []*Job

// Heard applies a report of run of the job name, and says what Admission must hear of it
// from the Scheduling: which runs left Starting (once per run: a run that is Running left
// it too), and which ended, so that their slots can go on at once. told: the job's workflow
// told Admission itself, with the report, and the Scheduling tells nothing.
func (q Jobs) Heard(name string, run int32, r Report, told bool) (leftStarting, ended Jobs) {
	for _, j := range q {
		if j.Job.Name != name || j.Run != run {
			continue
		}
		j.Apply(r)
		if (r.Started || r.State == v1alpha1.JobRunning) && !j.Started {
			j.Started = true
			if !told {
				leftStarting = append(leftStarting, j)
			}
		}
		if r.State.Ended() && !told {
			ended = append(ended, j)
		}
	}
	return leftStarting, ended
}

// AllDone: every job ended.
func (q Jobs) AllDone() bool {
	return !slices.ContainsFunc(q, func(j *Job) bool { return !j.Done() })
}

// AnyWaiting: a job waits for its grant.
func (q Jobs) AnyWaiting() bool {
	return slices.ContainsFunc(q, (*Job).Waiting)
}

// Waiting are the jobs that wait for their grants, in order.
func (q Jobs) Waiting() Jobs {
	var out Jobs
	for _, j := range q {
		if j.Waiting() {
			out = append(out, j)
		}
	}
	return out
}

// Names are the jobs' names, in order.
func (q Jobs) Names() []string {
	names := make([]string, len(q))
	for i, j := range q {
		names[i] = j.Job.Name
	}
	return names
}

// Find is the job of the name (nil: none).
func (q Jobs) Find(name string) *Job {
	if i := slices.IndexFunc(q, func(j *Job) bool { return j.Job.Name == name }); i >= 0 {
		return q[i]
	}
	return nil
}

// Failed counts the jobs that ended Failed.
func (q Jobs) Failed() int {
	n := 0
	for _, j := range q {
		if j.State == v1alpha1.JobFailed {
			n++
		}
	}
	return n
}

// Added are the jobs of list that the queue does not hold yet, in list's order.
func (q Jobs) Added(list []v1alpha1.SchedulingJob) []v1alpha1.SchedulingJob {
	var out []v1alpha1.SchedulingJob
	for _, j := range list {
		if q.Find(j.Name) == nil {
			out = append(out, j)
		}
	}
	return out
}

// ValidateExtend refuses an extension that could not run. list is the Scheduling's whole
// new job list: it must pass the rules of the schema (the API checks the same) and keep
// every queued job, and only a Scheduling that is Acquiring or Scheduling takes more jobs.
func (q Jobs) ValidateExtend(mode v1alpha1.SchedulingMode, state v1alpha1.SchedulingState, list []v1alpha1.SchedulingJob) error {
	if errs := v1alpha1.ValidateSchedulingJobs(mode, list, field.NewPath("spec", "jobs")); len(errs) > 0 {
		return errs.ToAggregate()
	}
	kept := make(map[string]bool, len(list))
	for _, j := range list {
		kept[j.Name] = true
	}
	for _, j := range q {
		if !kept[j.Job.Name] {
			return fmt.Errorf("job %s is queued already and cannot be removed", j.Job.Name)
		}
	}
	if state != v1alpha1.SchedulingScheduling && state != v1alpha1.SchedulingAcquiring {
		return fmt.Errorf("the scheduling is %s and takes no more jobs", state)
	}
	return nil
}

// Grant is what a Scheduling needs to know of one of Admission's grants to judge it.
type Grant struct {
	// Current: the grant's key is the job's run in this Scheduling (its UID and run).
	Current bool
	// Seq is the grant's number (0: a grant Admission restored, which has none).
	Seq int64
	// Refused: Admission will never admit the job.
	Refused bool
}

// Verdict is what a Scheduling does with a grant.
type Verdict int

const (
	// Ignore: the grant changes nothing (a repeat of the one the job runs on, a late copy
	// of one given back, a refusal of a job that does not wait).
	Ignore Verdict = iota
	// Release: nobody here wants the grant (a stale key, a job that ended or left): Admission
	// is told to release it.
	Release
	// Refuse: the job waited, and fails, not admitted.
	Refuse
	// Take: the job waited for this grant, and starts in its slots.
	Take
)

// Judge decides what the grant g does to j, the job it names (nil: no such job).
func Judge(j *Job, g Grant) Verdict {
	switch {
	case g.Current && j.Waiting() && g.Seq != 0 && g.Seq <= j.GaveBack:
		// A late copy of a grant the job gave back: Admission has released it and holds
		// the job's new request, which nothing here may touch.
		return Ignore
	case g.Current && j.Waiting():
		if g.Refused {
			return Refuse
		}
		return Take
	case g.Current && j.Active():
		return Ignore // a repeat of the grant it runs on
	case g.Refused:
		return Ignore // a refusal of something that does not wait: nothing is held
	}
	return Release
}

// Resume takes up run 1 of the job from what the cluster shows of it: the slots of its
// grant, granted at grantedAt, and the run's state as its status shows it (r.State ""
// when the run has not started). It says whether the run started.
func (j *Job) Resume(slots []int32, grantedAt *metav1.MicroTime, r Report) (started bool) {
	j.Run, j.Slots = 1, slots
	if grantedAt != nil {
		j.RequestedAt = grantedAt.Time
	}
	if r.State == "" {
		return false
	}
	j.Apply(r)
	return true
}

// TestBedFound sets the Scheduling's TestBedFound condition: whether its test bed exists
// (the jobs wait for it otherwise), at the time now, which becomes the transition time
// when the status changes.
func TestBedFound(st *v1alpha1.SchedulingStatus, bed string, exists bool, now time.Time) {
	c := metav1.Condition{Type: v1alpha1.ConditionTestBedFound, Status: metav1.ConditionTrue, Reason: "TestBedExists",
		Message: fmt.Sprintf("test bed %s exists", bed), LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second))}
	if !exists {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "TestBedMissing", fmt.Sprintf("test bed %s does not exist; the jobs wait for it", bed)
	}
	v1alpha1.SetCondition(&st.Conditions, c)
}

// Take starts the job on its grant: run 1 in the slots, asked for at the time at.
func (j *Job) Take(slots []int32, seq int64, at time.Time) {
	j.Run, j.Slots, j.RequestedAt, j.Grant = 1, slots, at, seq
}

// GiveBack undoes the taking of a grant whose slots left the test bed before the job's
// request was written (nothing was written): the job waits again, and its next request
// names the grant it gave back.
func (j *Job) GiveBack(why string) {
	j.GaveBack = j.Grant
	j.Run, j.Slots, j.RequestedAt, j.Grant = 0, nil, time.Time{}, 0
	j.Message = v1alpha1.ClipMessage("waiting again: " + why)
}
