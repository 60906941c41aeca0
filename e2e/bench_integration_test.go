//go:build integration

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/appsim"
	"slotplane/internal/testplatform"
)

// BenchmarkOrchestration_16JobsOn8Slots measures what slotplane adds around each job. 16
// one-slot Spark jobs that each run 1s go through one QueueBased Scheduling on 8 free slots,
// so the ideal makespan is 2s. It reports:
//   - claim-to-running-ms: per job of the first wave (its slot was free at once), from the
//     Scheduling's claim to all its pods running in their slots: the admission, the
//     application's creation, the driver, the executor's placement through the extender
//     (which evicts the slot's ghost), and the status writes on the way;
//   - end-to-start-ms: per job of the second wave, from the end of the job it follows to its
//     own start (a slot freed, its ghost not yet back, handed on);
//   - makespan-s: from creating the Scheduling to its Completed.
func BenchmarkOrchestration_16JobsOn8Slots(b *testing.B) {
	p := testplatform.Start(b, testplatform.DefaultBed)
	ctx := context.Background()
	for i := range b.N {
		var entries []v1alpha1.SchedulingJob
		for k := range 16 {
			name := fmt.Sprintf("bench-%d-%02d", i, k)
			j := &v1alpha1.BatchJob{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{appsim.SimDurationAnnotation: "1s"}},
				Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark,
					Application:     v1alpha1.Application{Image: "registry.example/bench:1", MainClass: "org.example.Bench", MainApplicationFile: "local:///opt/bench.jar"},
					DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}},
			}
			if err := p.Client.Create(ctx, j); err != nil {
				b.Fatal(err)
			}
			entries = append(entries, v1alpha1.SchedulingJob{Name: name, Replication: 1})
		}
		s := &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i), Namespace: "default"},
			Spec: v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: entries}}
		start := time.Now()
		if err := p.Client.Create(ctx, s); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Minute)
		for {
			if err := p.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				b.Fatal(err)
			}
			if s.Status.State == v1alpha1.SchedulingCompleted {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the Scheduling did not complete: %s %s", s.Status.State, s.Status.Message)
			}
			time.Sleep(50 * time.Millisecond)
		}
		makespan := time.Since(start)
		var jobs []v1alpha1.BatchJob
		for _, e := range entries {
			var j v1alpha1.BatchJob
			if err := p.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: e.Name}, &j); err != nil {
				b.Fatal(err)
			}
			if j.Status.State != v1alpha1.JobCompleted || j.Status.QueuedAt == nil || j.Status.RunningAt == nil || j.Status.FinishedAt == nil {
				b.Fatalf("job %s: %s %s", j.Name, j.Status.State, j.Status.Message)
			}
			jobs = append(jobs, j)
		}
		// The first wave started first; each of the second follows the earliest end not yet
		// followed.
		slices.SortFunc(jobs, func(a, b v1alpha1.BatchJob) int { return a.Status.RunningAt.Compare(b.Status.RunningAt.Time) })
		var claim, handOn time.Duration
		for _, j := range jobs[:8] {
			claim += j.Status.RunningAt.Sub(j.Status.QueuedAt.Time)
		}
		ends := make([]time.Time, 0, 8)
		for _, j := range jobs[:8] {
			ends = append(ends, j.Status.FinishedAt.Time)
		}
		slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
		for k, j := range jobs[8:] {
			handOn += j.Status.RunningAt.Sub(ends[k])
		}
		b.ReportMetric(float64(claim.Milliseconds())/8, "claim-to-running-ms")
		b.ReportMetric(float64(handOn.Milliseconds())/8, "end-to-start-ms")
		b.ReportMetric(makespan.Seconds(), "makespan-s")
	}
}
