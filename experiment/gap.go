package experiment

import (
	"maps"
	"slices"
	"time"
)

// Gap is how far an experiment landed from what the simulator predicted for it.
//
// Sign convention: every difference is measured minus predicted, so a positive one means
// the test bed was later (or longer) than predicted, a negative one earlier.
type Gap struct {
	// MakespanRatio is the measured makespan over the predicted one (1: as predicted; above
	// 1: the bed took longer). 0 when the prediction has no makespan.
	MakespanRatio float64
	// Starts compares, by job name, the start of each job that started on both sides: the
	// measured start is its first attempt's admission.
	Starts []StartDiff
	// Compared is len(Starts); the figures below are over those jobs. MeanStartDiff keeps
	// the sign (a bias: positive when jobs mostly started late); the others are over
	// absolute differences (how far off, either way), the percentiles nearest-rank.
	Compared                                           int
	MeanStartDiff                                      time.Duration
	MeanAbsStartDiff, P50AbsStartDiff, P95AbsStartDiff time.Duration
	// OnlyMeasured are the jobs that finished on the bed but not in the simulation;
	// OnlyPredicted those the simulation finished and the bed did not. Sorted.
	OnlyMeasured, OnlyPredicted []string
}

// StartDiff is one job's start on the bed against its predicted start.
type StartDiff struct {
	Job                 string
	Measured, Predicted time.Duration
	// Diff is Measured - Predicted: positive when the job started later than predicted.
	Diff time.Duration
}

// CompareWith measures the gap between measured runs and the prediction p for the same
// trace; with no prediction it is the zero Gap.
//
// A measured job counts as finished when one of its runs ended other than released (a
// released run is run again); a predicted job when it has an end.
func CompareWith(measured []Run, p *Prediction) Gap {
	if p == nil {
		return Gap{}
	}
	var g Gap
	if pm := makespan(p.Runs()); pm > 0 {
		g.MakespanRatio = float64(makespan(measured)) / float64(pm)
	}
	first := map[string]Run{}
	finished := map[string]bool{}
	for _, r := range measured {
		if f, ok := first[r.Job]; !ok || r.Attempt < f.Attempt {
			first[r.Job] = r
		}
		if r.Ended >= 0 && r.Outcome != OutcomeReleased {
			finished[r.Job] = true
		}
	}
	for _, job := range slices.Sorted(maps.Keys(first)) {
		m, pr := first[job], p.Jobs[job]
		if _, ok := p.Jobs[job]; !ok || m.Admitted < 0 || pr.Admitted < 0 {
			continue
		}
		g.Starts = append(g.Starts, StartDiff{Job: job, Measured: m.Admitted, Predicted: pr.Admitted, Diff: m.Admitted - pr.Admitted})
	}
	for _, job := range slices.Sorted(maps.Keys(p.Jobs)) {
		if p.Jobs[job].Ended >= 0 && !finished[job] {
			g.OnlyPredicted = append(g.OnlyPredicted, job)
		}
	}
	for _, job := range slices.Sorted(maps.Keys(finished)) {
		if pr, ok := p.Jobs[job]; !ok || pr.Ended < 0 {
			g.OnlyMeasured = append(g.OnlyMeasured, job)
		}
	}
	g.Compared = len(g.Starts)
	if g.Compared == 0 {
		return g
	}
	var sum, sumAbs time.Duration
	abs := make([]time.Duration, 0, g.Compared)
	for _, s := range g.Starts {
		a := max(s.Diff, -s.Diff)
		sum += s.Diff
		sumAbs += a
		abs = append(abs, a)
	}
	slices.Sort(abs)
	n := time.Duration(g.Compared)
	g.MeanStartDiff, g.MeanAbsStartDiff = sum/n, sumAbs/n
	g.P50AbsStartDiff, g.P95AbsStartDiff = nearestRank(abs, 50), nearestRank(abs, 95)
	return g
}
