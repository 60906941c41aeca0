package render

import (
	"time"

	"slotplane/simulation/replay"
)

// SimulationReport is the JSON report of a replay. Its figures are replay.Result's,
// with times in seconds and resources in the allocation file's form.
type SimulationReport struct {
	Trace           string  `json:"trace"`
	Allocations     string  `json:"allocations"`
	Nodes           int     `json:"nodes"`
	SlotsPerNode    int     `json:"slotsPerNode"`
	Slots           int     `json:"slots"`
	SlotSize        string  `json:"slotSize"`
	Mode            string  `json:"mode"`
	StartUpSeconds  float64 `json:"startUpSeconds"`
	Preemption      string  `json:"preemption"`
	Summary         string  `json:"summary"`
	Jobs            int     `json:"jobs"`
	Done            int     `json:"done"`
	Refused         int     `json:"refused"`
	Unfinished      int     `json:"unfinished"`
	MakespanSeconds float64 `json:"makespanSeconds"`
	EndSeconds      float64 `json:"endSeconds"`
	Stopped         string  `json:"stopped,omitempty"`
	SlotUtilization float64 `json:"slotUtilization"`
	Fairness        float64 `json:"fairness"`
	PreemptedSlots  int     `json:"preemptedSlots"`
	// MaxHeadWaitSeconds is the longest a job waited as the first waiting job of its queue.
	MaxHeadWaitSeconds float64          `json:"maxHeadWaitSeconds"`
	Queues             []SimulatedQueue `json:"queues"`
	JobOutcomes        []SimulatedJob   `json:"jobOutcomes"`
}

// SimulatedQueue is one queue's figures in a SimulationReport.
type SimulatedQueue struct {
	Queue           string  `json:"queue"`
	Done            int     `json:"done"`
	Refused         int     `json:"refused"`
	Unfinished      int     `json:"unfinished"`
	MeanWaitSeconds float64 `json:"meanWaitSeconds"`
	P50WaitSeconds  float64 `json:"p50WaitSeconds"`
	P95WaitSeconds  float64 `json:"p95WaitSeconds"`
	MaxWaitSeconds  float64 `json:"maxWaitSeconds"`
	AvgSlots        float64 `json:"avgSlots"`
	SlotShare       float64 `json:"slotShare"`
	SteadyShare     float64 `json:"steadyShare"`
	UseOverFair     float64 `json:"useOverFair"`
	UseOverFairRoom float64 `json:"useOverFairRoom"`
	// PreemptedFor is how many slots were preempted for the queue's jobs, LostToOther how
	// many its jobs lost to other queues.
	PreemptedFor int `json:"preemptedFor"`
	LostToOther  int `json:"lostToOther"`
}

// SimulatedJob is one job's outcome in a SimulationReport; the times of a job that never
// started or finished are left out.
type SimulatedJob struct {
	Name           string   `json:"name"`
	User           string   `json:"user"`
	Queue          string   `json:"queue"`
	SubmitSeconds  float64  `json:"submitSeconds"`
	StartSeconds   *float64 `json:"startSeconds,omitempty"`
	FinishSeconds  *float64 `json:"finishSeconds,omitempty"`
	WaitSeconds    *float64 `json:"waitSeconds,omitempty"`
	PreemptedSlots int      `json:"preemptedSlots,omitempty"`
	// Refused is why the job was refused at submission; Waiting why an unfinished job
	// waited last.
	Refused string `json:"refused,omitempty"`
	Waiting string `json:"waiting,omitempty"`
}

// simulationReport builds the JSON report of a run. Its lists are never null, so that a
// reader can range over them without a check.
func simulationReport(run SimulationRun) SimulationReport {
	r := run.Result
	rep := SimulationReport{
		Trace: run.Trace, Allocations: run.Allocations, Nodes: run.Nodes, SlotsPerNode: run.SlotsPerNode, Slots: r.Slots, SlotSize: r.SlotSize.String(),
		Mode: string(r.Mode), StartUpSeconds: r.StartUp.Seconds(), Preemption: r.Preemption, Summary: ReplaySummary(r),
		Jobs: r.Jobs, Done: r.Done, Refused: r.Refused, Unfinished: r.Unfinished,
		MakespanSeconds: r.Makespan.Seconds(), EndSeconds: r.End.Seconds(), Stopped: r.Stopped,
		SlotUtilization: r.SlotUtilization, Fairness: r.Fairness, PreemptedSlots: r.PreemptedSlots, MaxHeadWaitSeconds: r.MaxHeadWait.Seconds(),
		Queues: []SimulatedQueue{}, JobOutcomes: []SimulatedJob{},
	}
	for _, q := range r.Queues {
		rep.Queues = append(rep.Queues, SimulatedQueue{
			Queue: q.Queue, Done: q.Done, Refused: q.Refused, Unfinished: q.Unfinished,
			MeanWaitSeconds: q.MeanWait.Seconds(), P50WaitSeconds: q.P50Wait.Seconds(), P95WaitSeconds: q.P95Wait.Seconds(), MaxWaitSeconds: q.MaxWait.Seconds(),
			AvgSlots: q.AvgSlots, SlotShare: q.SlotShare, SteadyShare: q.SteadyShare, UseOverFair: q.UseOverFair, UseOverFairRoom: q.UseOverFairRoom,
			PreemptedFor: q.PreemptedSlots, LostToOther: q.LostToOther,
		})
	}
	for _, o := range r.Outcomes {
		rep.JobOutcomes = append(rep.JobOutcomes, simulatedJob(o))
	}
	return rep
}

// simulatedJob is one job's outcome in seconds.
func simulatedJob(o replay.JobOutcome) SimulatedJob {
	seconds := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	j := SimulatedJob{Name: o.Name, User: o.User, Queue: o.Queue, SubmitSeconds: o.Submit.Seconds(), PreemptedSlots: o.Preempted, Refused: o.Refused, Waiting: o.Waiting}
	if o.Started {
		j.StartSeconds, j.WaitSeconds = seconds(o.Start), seconds(o.Wait())
	}
	if o.Finished {
		j.FinishSeconds = seconds(o.Finish)
	}
	return j
}
