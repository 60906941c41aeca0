package workflows

import (
	"context"

	"slotplane/activities"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// Copies are the worker's copies of cluster objects as a workflow may read them: inside a
// side effect, which records the answer in the history, so a replay reads the history and
// not the copies. Each read answers at once from memory, and ok false sends the workflow to
// the local activity that reads the API server. A local activity costs a round trip through
// the worker's local activity queue, which a busy worker shares with every Scheduling's and
// job's cluster calls: Admission read the slots that way before each decision, and under
// load those reads were most of its longest workflow task.
type Copies interface {
	CopiedSlots(ctx context.Context, in activities.TestBedRef) (slots activities.TestBedSlots, ok bool)
	AllocationFileUnchanged(ctx context.Context, in activities.AllocationFileRef) bool
}

// copiesKey is the workflow context's key of the worker's Copies.
type copiesKey struct{}

// CopiesInterceptor gives every workflow of a worker the worker's copies (c).
func CopiesInterceptor(c Copies) interceptor.WorkerInterceptor {
	return &copiesInterceptor{copies: c}
}

type copiesInterceptor struct {
	interceptor.WorkerInterceptorBase
	copies Copies
}

func (i *copiesInterceptor) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &copiesInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, copies: i.copies}
}

type copiesInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	copies Copies
}

func (i *copiesInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	return i.Next.ExecuteWorkflow(workflow.WithValue(ctx, copiesKey{}, i.copies), in)
}

// copiesOf is the worker's copies, or nil for a worker without them (a replayer, a test's).
func copiesOf(ctx workflow.Context) Copies {
	c, _ := ctx.Value(copiesKey{}).(Copies)
	return c
}

// copiedSlots is what readSlots records of a read of the copies.
type copiedSlots struct {
	Slots activities.TestBedSlots `json:",omitempty"`
	OK    bool                    `json:",omitempty"`
}

// readSlots reads the test bed's slots: from the worker's copies in a side effect, else
// (no copies, not synced, the bed not in them) with the ReadSlots local activity.
func readSlots(ctx workflow.Context, ref activities.TestBedRef) (activities.TestBedSlots, error) {
	c := copiesOf(ctx)
	var read copiedSlots
	if err := workflow.SideEffect(ctx, func(workflow.Context) any {
		if c == nil {
			return copiedSlots{}
		}
		s, ok := c.CopiedSlots(context.Background(), ref)
		return copiedSlots{Slots: s, OK: ok}
	}).Get(&read); err != nil {
		return activities.TestBedSlots{}, err
	}
	if read.OK {
		return read.Slots, nil
	}
	var slots activities.TestBedSlots
	err := quick(ctx, acts.ReadSlots, ref).Get(ctx, &slots)
	return slots, err
}

// allocationFileUnchanged says whether the worker's copy shows the allocation file at the
// version ref holds, read in a side effect; false when the workflow must ask
// LoadAllocationFile.
func allocationFileUnchanged(ctx workflow.Context, ref activities.AllocationFileRef) (bool, error) {
	c := copiesOf(ctx)
	var unchanged bool
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		return c != nil && c.AllocationFileUnchanged(context.Background(), ref)
	}).Get(&unchanged)
	return unchanged, err
}
