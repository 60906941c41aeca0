package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"slotplane/activities"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fakeCopies answers from a slot picture, or misses (ok false) while missing is set.
type fakeCopies struct {
	mu        sync.Mutex
	free      []int32
	missing   bool
	unchanged bool
	slotReads int
	fileReads int
}

func (c *fakeCopies) CopiedSlots(_ context.Context, in activities.TestBedRef) (activities.TestBedSlots, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slotReads++
	if c.missing || in.Name != "bed" {
		return activities.TestBedSlots{}, false
	}
	return activities.TestBedSlots{Exists: true, Positions: []int32{0, 1, 2, 3}, Free: c.free,
		SlotSize: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}, true
}

func (c *fakeCopies) AllocationFileUnchanged(context.Context, activities.AllocationFileRef) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fileReads++
	return c.unchanged
}

// With the worker's copies, Admission reads the slots and the allocation file's version in
// side effects, and runs no local activity for them; when the copies miss, it falls back to
// the local activities.
func TestAdmissionWorkflow_ReadsTheWorkersCopiesInSideEffects(t *testing.T) {
	for _, missing := range []bool{false, true} {
		t.Run(map[bool]string{false: "copies", true: "missing"}[missing], func(t *testing.T) {
			w := &admissionWorld{}
			env := newAdmissionEnv(t, w, 1) // the local activity's answer: one slot
			copies := &fakeCopies{free: []int32{0, 1, 2, 3}, missing: missing, unchanged: true}
			env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{CopiesInterceptor(copies)}})
			local := map[string]int{}
			env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) { local[info.ActivityType.Name]++ })
			env.RegisterDelayedCallback(func() {
				var reqs []AdmissionRequest
				for _, job := range []string{"a", "b", "c"} {
					reqs = append(reqs, AdmissionRequest{JobKey: jk("s", job), User: "u", Slots: 1})
				}
				env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, reqs)
			}, time.Second)
			env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 6, Resync: 10 * time.Second})
			require.Positive(t, copies.slotReads)
			require.Positive(t, copies.fileReads, "a resync asks the copy first")
			if missing {
				require.Len(t, w.grants, 1, "the local activity's one slot")
				require.Equal(t, copies.slotReads, local["ReadSlots"], "each miss reads the slots with the local activity")
				return
			}
			require.Len(t, w.grants, 3, "the copy's four slots")
			require.Zero(t, local["ReadSlots"])
			require.Empty(t, w.loads, "the copy shows the file unchanged")
		})
	}
}

// A file the copy shows changed is read by an activity, never a local one, which would hold
// the workflow task open while the API server answers.
func TestAdmissionWorkflow_ReadsAChangedFileOutsideItsTask(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 4)
	copies := &fakeCopies{free: []int32{0, 1, 2, 3}}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{CopiesInterceptor(copies)}})
	local := map[string]int{}
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) { local[info.ActivityType.Name]++ })
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 3, Resync: 10 * time.Second})
	require.Positive(t, copies.fileReads)
	require.Len(t, w.loads, copies.fileReads, "each change the copy shows is read")
	require.Zero(t, local["LoadAllocationFile"], "by the activity, not a local one")
}
