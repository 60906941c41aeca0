package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
	"slotplane/schedplan"
)

// A Scheduling at every limit at once (the most jobs, the longest names, the most slots with
// five-digit ids, every message as long as the status keeps it) stays under 80% of etcd's
// 1.5 MiB as an object, and under 75% of Temporal's 2 MiB for one payload as what its
// workflow carries across continue-as-new.
func TestSchedulingSizesFit(t *testing.T) {
	const objectLimit, payloadLimit = 1536 << 10 * 8 / 10, 2 << 20 * 3 / 4
	n := v1alpha1.MaxSchedulingJobs
	perJob := v1alpha1.MaxSchedulingSlots / n
	spec := v1alpha1.SchedulingSpec{TestBed: strings.Repeat("b", 253), Mode: v1alpha1.SlotBased, Queue: strings.Repeat("q", 255)}
	var entries []schedplan.Job
	status := v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling, Message: strings.Repeat("m", 1024)}
	at := time.Date(2026, 11, 23, 23, 59, 59, 999999999, time.UTC)
	long := strings.Repeat("x", 2*v1alpha1.MaxJobMessage) // clipped, as every message is
	slot := int32(10000)
	for i := range n {
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("j", 248))
		var ids []int32
		for range perJob + boolInt(i < v1alpha1.MaxSchedulingSlots%n) {
			ids = append(ids, slot)
			slot++
		}
		job := v1alpha1.SchedulingJob{Name: name, Replication: int32(len(ids)), SlotIDs: ids}
		spec.Jobs = append(spec.Jobs, job)
		entries = append(entries, schedplan.Job{Job: job, State: v1alpha1.JobRunning, Slots: ids, Run: 99, Message: v1alpha1.ClipMessage(long),
			RequestedAt: at, SubmittedAt: at, RunningAt: at, FinishedAt: at, Started: true})
		status.Jobs = append(status.Jobs, v1alpha1.SchedulingJobStatus{Name: name, State: v1alpha1.JobRunning, Slots: ids,
			Message: v1alpha1.ClipMessage(long), WaitTime: &metav1.Duration{Duration: 99 * time.Hour}, RunTime: &metav1.Duration{Duration: 99 * time.Hour}})
	}
	if slot-10000 != v1alpha1.MaxSchedulingSlots || len(spec.Jobs[0].Name) != 253 || len(entries[0].Message) != v1alpha1.MaxJobMessage {
		t.Fatalf("the worst case is not built right: %d slots, a name of %d, a message of %d", slot-10000, len(spec.Jobs[0].Name), len(entries[0].Message))
	}
	object, err := json.Marshal(v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("s", 253), Namespace: strings.Repeat("n", 63)}, Spec: spec, Status: status})
	if err != nil {
		t.Fatal(err)
	}
	sched := &scheduler{spec: spec, status: status, uid: "0b1d0a2c-1111-2222-3333-444455556666"}
	for i := range entries {
		sched.entries = append(sched.entries, &entries[i])
	}
	carried, err := json.Marshal(SchedulingInput{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("s", 253), Carried: sched.carry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("at the limits: the object is %d KiB, the continue-as-new input %d KiB", len(object)>>10, len(carried)>>10)
	if len(object) > objectLimit {
		t.Errorf("the object is %d bytes, over %d", len(object), objectLimit)
	}
	if len(carried) > payloadLimit {
		t.Errorf("the continue-as-new input is %d bytes, over %d", len(carried), payloadLimit)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
