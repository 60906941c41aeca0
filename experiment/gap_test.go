package experiment

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestCompareWith(t *testing.T) {
	// predicted is a predicted run: start s, end e (negative: not finished).
	predicted := func(arrive, s, e float64) Run {
		r := makeRun("").Arrive(arrive).Width(1).Obj()
		if s >= 0 {
			r.Admitted = sec(s)
		}
		if e >= 0 {
			r.Ended = sec(e)
		}
		return r
	}
	cases := map[string]struct {
		measured []Run
		p        *Prediction
		want     Gap
	}{
		"no prediction, no gap": {
			measured: []Run{makeRun("a").Arrive(0).Admit(1).End(5, OutcomeCompleted).On("n", 0).Obj()},
			want:     Gap{},
		},
		"a job that started later than predicted has a positive difference": {
			measured: []Run{makeRun("a").Arrive(0).Admit(5).End(15, OutcomeCompleted).On("n", 0).Obj()},
			p:        &Prediction{Jobs: map[string]Run{"a": predicted(0, 3, 10)}},
			want: Gap{MakespanRatio: 1.5, Compared: 1,
				Starts:        []StartDiff{{Job: "a", Measured: sec(5), Predicted: sec(3), Diff: sec(2)}},
				MeanStartDiff: sec(2), MeanAbsStartDiff: sec(2), P50AbsStartDiff: sec(2), P95AbsStartDiff: sec(2)},
		},
		"early and late cancel in the mean but not in the absolute figures": {
			measured: []Run{
				makeRun("a").Arrive(0).Admit(5).End(10, OutcomeCompleted).On("n", 0).Obj(),
				makeRun("b").Arrive(0).Admit(0).End(10, OutcomeCompleted).On("n", 1).Obj(),
				makeRun("c").Arrive(0).Admit(10).End(20, OutcomeCompleted).On("n", 0).Obj(),
			},
			p: &Prediction{Jobs: map[string]Run{
				"a": predicted(0, 1, 10), "b": predicted(0, 4, 10), "c": predicted(0, 10, 20),
			}},
			want: Gap{MakespanRatio: 1, Compared: 3,
				Starts: []StartDiff{
					{Job: "a", Measured: sec(5), Predicted: sec(1), Diff: sec(4)},
					{Job: "b", Measured: 0, Predicted: sec(4), Diff: -sec(4)},
					{Job: "c", Measured: sec(10), Predicted: sec(10), Diff: 0},
				},
				MeanStartDiff: 0, MeanAbsStartDiff: 8 * time.Second / 3, P50AbsStartDiff: sec(4), P95AbsStartDiff: sec(4)},
		},
		"a job run twice is compared by its first attempt's start": {
			measured: []Run{
				makeRun("a").Attempt(2).Arrive(0).Admit(20).End(30, OutcomeCompleted).On("n", 0).Obj(),
				makeRun("a").Arrive(0).Admit(2).End(6, OutcomeReleased).On("n", 0).Obj(),
			},
			p: &Prediction{Jobs: map[string]Run{"a": predicted(0, 1, 30)}},
			want: Gap{MakespanRatio: 1, Compared: 1,
				Starts:        []StartDiff{{Job: "a", Measured: sec(2), Predicted: sec(1), Diff: sec(1)}},
				MeanStartDiff: sec(1), MeanAbsStartDiff: sec(1), P50AbsStartDiff: sec(1), P95AbsStartDiff: sec(1)},
		},
		"jobs that only one side started are not compared; those only one side finished are named": {
			measured: []Run{
				makeRun("a").Arrive(0).Admit(0).End(10, OutcomeCompleted).On("n", 0).Obj(),
				// only released: never finished on the bed, though the simulation finished it
				makeRun("b").Arrive(0).Admit(10).End(12, OutcomeReleased).On("n", 0).Obj(),
				// never admitted on the bed
				makeRun("c").Arrive(0).Obj(),
				// failed is finished; the simulation never started it
				makeRun("d").Arrive(0).Admit(1).End(8, OutcomeFailed).On("n", 1).Obj(),
				// not in the prediction at all
				makeRun("e").Arrive(0).Admit(0).End(5, OutcomeCompleted).On("n", 2).Obj(),
			},
			p: &Prediction{Jobs: map[string]Run{
				"a": predicted(0, 0, 10), "b": predicted(0, 10, 20), "c": predicted(0, 5, 10), "d": predicted(0, -1, -1),
			}},
			want: Gap{MakespanRatio: 0.6, Compared: 2,
				Starts: []StartDiff{
					{Job: "a", Diff: 0},
					{Job: "b", Measured: sec(10), Predicted: sec(10), Diff: 0},
				},
				OnlyMeasured: []string{"d", "e"}, OnlyPredicted: []string{"b", "c"}},
		},
		"a prediction that finished nothing has no makespan ratio": {
			measured: []Run{makeRun("a").Arrive(0).Admit(1).End(5, OutcomeCompleted).On("n", 0).Obj()},
			p:        &Prediction{Jobs: map[string]Run{"a": predicted(0, -1, -1)}},
			want:     Gap{OnlyMeasured: []string{"a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CompareWith(tc.measured, tc.p)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("CompareWith (-want +got):\n%s", diff)
			}
		})
	}
}
