package render

import (
	"fmt"
	"io"
	"strconv"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// Jobs prints BatchJobs as a table, one row each, or "no jobs".
func Jobs(out io.Writer, jobs []apitypes.Job) error {
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(out, "no jobs")
		return err
	}
	rows := [][]string{{"NAME", "FRAMEWORK", "STATE", "QUEUE", "USER", "SCHEDULING", "SLOTS"}}
	for _, j := range jobs {
		state := j.Status.State
		if state == "" {
			state = v1alpha1.JobReady // as the API reads a job no Scheduling touched
		}
		if j.Status.Reason != "" {
			state += " (" + v1alpha1.BatchJobState(j.Status.Reason) + ")"
		}
		// The queue the job is in (placement's choice or a move's), else the one it asks for.
		queue := j.Status.Queue
		if queue == "" {
			queue = j.Queue
		}
		rows = append(rows, []string{j.Name, string(j.Framework), string(state), orDash(queue), orDash(j.User), orDash(j.Scheduling), slotList(j.Status.Slots)})
	}
	return table(out, rows)
}

// Schedulings prints Schedulings as a table, one row each, or "no schedulings". One being
// deleted that has not ended yet shows as cancelling.
func Schedulings(out io.Writer, scheds []apitypes.Scheduling) error {
	if len(scheds) == 0 {
		_, err := fmt.Fprintln(out, "no schedulings")
		return err
	}
	rows := [][]string{{"NAME", "MODE", "STATE", "JOBS", "FINISHED", "RUNNING", "TESTBED"}}
	for _, s := range scheds {
		state := orDash(string(s.Status.State))
		if s.Deleting && !Ended(s.Status.State) {
			state += " (cancelling)"
		}
		rows = append(rows, []string{s.Name, string(s.Mode), state, strconv.Itoa(totalJobs(s)),
			strconv.Itoa(int(s.Status.FinishedJobs)), strconv.Itoa(int(s.Status.RunningJobs)), s.TestBed})
	}
	return table(out, rows)
}

// TestBeds prints test beds as a table, one row each, or "no test beds": their slot counts
// and whether they are Ready (every free slot holds its ghost), with the reason when not.
func TestBeds(out io.Writer, beds []apitypes.TestBed) error {
	if len(beds) == 0 {
		_, err := fmt.Fprintln(out, "no test beds")
		return err
	}
	rows := [][]string{{"NAME", "LABEL", "NODES", "SLOTS", "FREE", "RESERVED", "OCCUPIED", "READY"}}
	for _, tb := range beds {
		ready := "-"
		if c := apimeta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			ready = string(c.Status)
			if c.Status != metav1.ConditionTrue && c.Reason != "" {
				ready += " (" + c.Reason + ")"
			}
		}
		st := tb.Status
		rows = append(rows, []string{tb.Name, tb.Spec.NodeLabel, itoa(st.Nodes), itoa(st.Total), itoa(st.Free), itoa(st.Reserved), itoa(st.Occupied), ready})
	}
	return table(out, rows)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// Slots prints a test bed's slots, each with the job that holds it (holders maps a slot's
// position to its job; a free slot shows none), and below them the bed's counts.
func Slots(out io.Writer, tb apitypes.TestBed, holders map[int32]string) error {
	rows := [][]string{{"POSITION", "NODE", "STATE", "POD", "JOB"}}
	for _, s := range tb.Status.Slots {
		job := ""
		if s.State != v1alpha1.SlotFree {
			job = holders[s.Position]
		}
		rows = append(rows, []string{strconv.Itoa(int(s.Position)), s.NodeName, string(s.State), orDash(s.PodName), orDash(job)})
	}
	if err := table(out, rows); err != nil {
		return err
	}
	st := tb.Status
	_, err := fmt.Fprintf(out, "\n%d slots on %d nodes: %d free, %d reserved, %d occupied\n", st.Total, st.Nodes, st.Free, st.Reserved, st.Occupied)
	return err
}

// Queues prints a test bed's queues with their shares and usage, then the jobs waiting
// (with why) and those running. A refused allocation file is said first, since the shares
// are then the last good file's.
func Queues(out io.Writer, t apitypes.QueueTree) error {
	if t.ConfigError != "" {
		fmt.Fprintf(out, "the newest allocation file was refused, the last good one is in force: %s\n\n", t.ConfigError)
	}
	rows := [][]string{{"PATH", "STEADY SHARE", "FAIR SHARE", "USAGE", "RUNNING", "PENDING"}}
	for _, q := range t.Queues {
		rows = append(rows, []string{q.Path, resources(q.SteadyShare), resources(q.FairShare), resources(q.Usage), strconv.Itoa(q.RunningJobs), strconv.Itoa(q.WaitingJobs)})
	}
	if err := table(out, rows); err != nil {
		return err
	}
	if len(t.Waiting) > 0 {
		rows = [][]string{{"WAITING JOB", "SCHEDULING", "QUEUE", "PRIORITY", "SLOTS", "REASON"}}
		for _, j := range t.Waiting {
			rows = append(rows, []string{j.Job, j.Scheduling, j.Queue, strconv.Itoa(int(j.Priority)), strconv.Itoa(int(j.Slots)), orDash(j.Reason)})
		}
		fmt.Fprintln(out)
		if err := table(out, rows); err != nil {
			return err
		}
		if t.MoreWaiting > 0 {
			fmt.Fprintf(out, "and %d more waiting\n", t.MoreWaiting)
		}
	}
	if len(t.Running) > 0 {
		rows = [][]string{{"RUNNING JOB", "SCHEDULING", "QUEUE", "SLOTS", "STATE"}}
		for _, j := range t.Running {
			rows = append(rows, []string{j.Job, j.Scheduling, j.Queue, slotList(j.Granted), orDash(j.State)})
		}
		fmt.Fprintln(out)
		if err := table(out, rows); err != nil {
			return err
		}
		if t.MoreRunning > 0 {
			fmt.Fprintf(out, "and %d more running\n", t.MoreRunning)
		}
	}
	return nil
}
