package experiment

import (
	"fmt"
	"math"
	"time"
)

// sec is x seconds, rounded to the millisecond the CSV keeps, so that built runs survive a
// round trip unchanged.
func sec(x float64) time.Duration {
	return time.Duration(math.Round(x*1000)) * time.Millisecond
}

// runBuilder builds a Run for a test: makeRun("a").Arrive(0).Admit(2).End(10, OutcomeCompleted).On("n1", 0, 1).Obj().
// A run starts with every phase not reached, in queue root.default, as attempt 1.
type runBuilder struct{ r Run }

func makeRun(job string) *runBuilder {
	return &runBuilder{Run{Job: job, BatchJob: "exp-" + job, Attempt: 1, Queue: "root.default",
		Admitted: NotReached, Running: NotReached, Ended: NotReached}}
}

func (b *runBuilder) Queue(q string) *runBuilder   { b.r.Queue = q; return b }
func (b *runBuilder) User(u string) *runBuilder    { b.r.User = u; return b }
func (b *runBuilder) Attempt(n int) *runBuilder    { b.r.Attempt = n; return b }
func (b *runBuilder) Arrive(s float64) *runBuilder { b.r.Arrival = sec(s); return b }
func (b *runBuilder) Width(n int) *runBuilder      { b.r.Width = n; return b }

// Admit also marks the run running 0.5 s later, as a live run would be.
func (b *runBuilder) Admit(s float64) *runBuilder {
	b.r.Admitted, b.r.Running = sec(s), sec(s+0.5)
	return b
}

func (b *runBuilder) End(s float64, outcome string) *runBuilder {
	b.r.Ended, b.r.Outcome = sec(s), outcome
	return b
}

// On puts the run in slots of node.
func (b *runBuilder) On(node string, slots ...int32) *runBuilder {
	for _, s := range slots {
		b.r.Slots = append(b.r.Slots, s)
		b.r.Nodes = append(b.r.Nodes, node)
	}
	return b
}

func (b *runBuilder) Obj() Run { return b.r }

// bed is a test bed of nodes nodes with perNode slots each, named node-0, node-1, …
func bed(nodes, perNode int) Bed {
	b := Bed{Name: "bed"}
	for n := range nodes {
		for range perNode {
			b.SlotNodes = append(b.SlotNodes, fmt.Sprintf("node-%d", n))
		}
	}
	return b
}
