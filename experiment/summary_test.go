package experiment

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSummarize(t *testing.T) {
	// waits of 1, 2, …, n seconds, each run holding one slot for 10 s.
	waits := func(n int) []Run {
		var runs []Run
		for i := 1; i <= n; i++ {
			runs = append(runs, makeRun("j").Arrive(0).Admit(float64(i)).End(float64(i)+10, OutcomeCompleted).On("n", 0).Obj())
		}
		return runs
	}
	cases := map[string]struct {
		runs  []Run
		slots int
		want  Summary
	}{
		"no runs: zeros, and fair by definition": {
			slots: 4,
			want:  Summary{Fairness: 1},
		},
		"one run: makespan from arrival to end, slot-time over the bed's": {
			runs:  []Run{makeRun("a").Arrive(0).Admit(2).End(10, OutcomeCompleted).On("n", 0, 1).Obj()},
			slots: 4,
			// 2 slots x 8 s held, of 4 slots x 10 s.
			want: Summary{Makespan: sec(10), MeanWait: sec(2), P50Wait: sec(2), P95Wait: sec(2), MaxWait: sec(2),
				Utilization: 0.4, Fairness: 1, Runs: 1, Jobs: 1, Admitted: 1, Completed: 1},
		},
		"makespan starts at the earliest arrival, not at zero": {
			runs: []Run{
				makeRun("a").Arrive(5).Admit(5).End(20, OutcomeCompleted).On("n", 0).Obj(),
				makeRun("b").Arrive(10).Admit(10).End(30, OutcomeCompleted).On("n", 1).Obj(),
			},
			slots: 2,
			// 15 + 20 slot-seconds of 2 x 25.
			want: Summary{Makespan: sec(25), Utilization: 0.7, Fairness: 1, Runs: 2, Jobs: 2, Admitted: 2, Completed: 2},
		},
		"a run never ended counts as unfinished, not in the makespan or slot-time; its wait counts": {
			runs: []Run{
				makeRun("a").Arrive(0).Admit(0).End(10, OutcomeCompleted).On("n", 0).Obj(),
				makeRun("b").Arrive(1).Admit(4).On("n", 1).Obj(),
				makeRun("c").Arrive(2).Obj(),
			},
			slots: 2,
			want: Summary{Makespan: sec(10), MeanWait: sec(1.5), P50Wait: 0, P95Wait: sec(3), MaxWait: sec(3),
				Utilization: 0.5, Fairness: 1, Runs: 3, Jobs: 3, Admitted: 2, Completed: 1, Unfinished: 2},
		},
		"outcomes and attempts: a released job that ran again is one job of two runs": {
			runs: []Run{
				makeRun("a").Arrive(0).Admit(0).End(4, OutcomeReleased).On("n", 0).Obj(),
				makeRun("a").Attempt(2).Arrive(0).Admit(4).End(8, OutcomeCompleted).On("n", 0).Obj(),
				makeRun("b").Arrive(0).Admit(0).End(8, OutcomeFailed).On("n", 1).Obj(),
			},
			slots: 2,
			// a's stretches are 1 and 2, b's 1: one user "-" in all.
			want: Summary{Makespan: sec(8), MeanWait: 4 * time.Second / 3, P50Wait: 0, P95Wait: sec(4), MaxWait: sec(4),
				Utilization: 1, Fairness: 1, Runs: 3, Jobs: 2, Admitted: 3, Completed: 1, Failed: 1, Released: 1},
		},
		"nearest-rank percentiles of 20 waits are waits that happened": {
			runs:  waits(20),
			slots: 20,
			want: Summary{Makespan: sec(30), MeanWait: sec(10.5), P50Wait: sec(10), P95Wait: sec(19), MaxWait: sec(20),
				Utilization: 200.0 / 600, Fairness: 1, Runs: 20, Jobs: 1, Admitted: 20, Completed: 20},
		},
		"with two waits the median is the lower and p95 the higher": {
			runs:  waits(2),
			slots: 2,
			want: Summary{Makespan: sec(12), MeanWait: sec(1.5), P50Wait: sec(1), P95Wait: sec(2), MaxWait: sec(2),
				Utilization: 20.0 / 24, Fairness: 1, Runs: 2, Jobs: 1, Admitted: 2, Completed: 2},
		},
		"a prediction's runs count their Width for slot-time": {
			runs: []Run{
				makeRun("a").Arrive(0).Admit(0).End(10, OutcomeCompleted).Width(3).Obj(),
				makeRun("b").Arrive(0).Admit(10).End(20, OutcomeCompleted).Width(1).Obj(),
			},
			slots: 4,
			// 30 + 10 slot-seconds of 4 x 20; users alike (both "-").
			want: Summary{Makespan: sec(20), MeanWait: sec(5), P50Wait: 0, P95Wait: sec(10), MaxWait: sec(10),
				Utilization: 0.5, Fairness: 1, Runs: 2, Jobs: 2, Admitted: 2, Completed: 2},
		},
		"no slots: no utilization rather than a division by zero": {
			runs:  []Run{makeRun("a").Arrive(0).Admit(0).End(10, OutcomeCompleted).On("n", 0).Obj()},
			slots: 0,
			want:  Summary{Makespan: sec(10), Fairness: 1, Runs: 1, Jobs: 1, Admitted: 1, Completed: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Summarize(tc.runs, tc.slots)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize_FairnessIsJainsIndexOverUsersMeanStretch(t *testing.T) {
	// A run of user u that waited `wait` and then held its slot for `hold`: stretch is
	// (wait+hold)/hold.
	run := func(u string, wait, hold float64) Run {
		return makeRun(u).User(u).Arrive(0).Admit(wait).End(wait+hold, OutcomeCompleted).On("n", 0).Obj()
	}
	cases := map[string]struct {
		runs []Run
		want float64
	}{
		"one user is fair by definition": {
			runs: []Run{run("a", 0, 10), run("a", 30, 10)},
			want: 1,
		},
		"two users served alike": {
			runs: []Run{run("a", 10, 10), run("b", 5, 5)},
			want: 1,
		},
		// x_a = 1/1, x_b = 1/2: (1.5)² / (2 · 1.25) = 0.9.
		"two users of different stretch": {
			runs: []Run{run("a", 0, 10), run("b", 10, 10)},
			want: 0.9,
		},
		// b's stretches 1 and 3 average 2, so x_b = 0.5 as above; averaging 1/stretch
		// instead would give 2/3 and J ≈ 0.96.
		"a user's stretch is the mean over its runs, inverted once": {
			runs: []Run{run("a", 0, 10), run("b", 0, 10), run("b", 20, 10)},
			want: 0.9,
		},
		"runs without a user are one user \"-\"": {
			runs: []Run{run("", 0, 10), run("", 0, 10), run("b", 10, 10)},
			want: 0.9,
		},
		"a run that held its slots for no time is skipped, and so is its user": {
			runs: []Run{run("a", 0, 10), run("b", 10, 10), run("c", 50, 0)},
			want: 0.9,
		},
		"runs never finished have no stretch": {
			runs: []Run{run("a", 0, 10), run("b", 10, 10),
				makeRun("c").User("c").Arrive(0).Admit(100).On("n", 0).Obj()},
			want: 0.9,
		},
		// x = 1, 1/3, 1/3: (5/3)² / (3 · 11/9) = 25/33.
		"three users": {
			runs: []Run{run("a", 0, 10), run("b", 20, 10), run("c", 20, 10)},
			want: 25.0 / 33,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Summarize(tc.runs, 1).Fairness
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("Fairness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNearestRank(t *testing.T) {
	cases := map[string]struct {
		values []time.Duration
		p      float64
		want   time.Duration
	}{
		"one value is every percentile":            {values: []time.Duration{7}, p: 95, want: 7},
		"p0 is the smallest":                       {values: []time.Duration{1, 2, 3}, p: 0, want: 1},
		"p100 is the largest":                      {values: []time.Duration{1, 2, 3}, p: 100, want: 3},
		"p50 of an even count is the lower":        {values: []time.Duration{1, 2, 3, 4}, p: 50, want: 2},
		"p95 of 10 values rounds its rank up":      {values: []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p: 95, want: 10},
		"p90 of 10 values lands exactly on rank 9": {values: []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p: 90, want: 9},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := nearestRank(tc.values, tc.p); got != tc.want {
				t.Errorf("nearestRank(%v, %v) = %v, want %v", tc.values, tc.p, got, tc.want)
			}
		})
	}
}

func TestPrediction_RunsAreSortedAndCompleteForSummarize(t *testing.T) {
	p := &Prediction{Jobs: map[string]Run{
		"late":  {Arrival: sec(5), Admitted: sec(6), Running: NotReached, Ended: sec(9), Width: 2},
		"early": {Arrival: sec(0), Admitted: sec(0), Running: NotReached, Ended: sec(4), Width: 1},
		"stuck": {Arrival: sec(5), Admitted: NotReached, Running: NotReached, Ended: NotReached, Width: 1},
	}}
	want := []Run{
		{Job: "early", Attempt: 1, Arrival: sec(0), Admitted: sec(0), Running: NotReached, Ended: sec(4), Width: 1, Outcome: OutcomeCompleted},
		{Job: "late", Attempt: 1, Arrival: sec(5), Admitted: sec(6), Running: NotReached, Ended: sec(9), Width: 2, Outcome: OutcomeCompleted},
		{Job: "stuck", Attempt: 1, Arrival: sec(5), Admitted: NotReached, Running: NotReached, Ended: NotReached, Width: 1},
	}
	if diff := cmp.Diff(want, p.Runs()); diff != "" {
		t.Errorf("Runs (-want +got):\n%s", diff)
	}
	s := Summarize(p.Runs(), 2)
	if s.Completed != 2 || s.Unfinished != 1 || s.Utilization != (4.0+6.0)/(2*9) {
		t.Errorf("Summarize(prediction) = %+v, want 2 completed, 1 unfinished, utilization 10/18", s)
	}
	if (*Prediction)(nil).Runs() != nil {
		t.Error("a missing prediction has runs")
	}
}
