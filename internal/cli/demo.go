package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/standin"
)

// demoJob is one job of the demo: Spark or Flink, its queue, slots and run time.
type demoJob struct {
	name      string
	framework v1alpha1.Framework
	queue     string
	slots     int32
	runFor    string
}

var demoJobs = []demoJob{
	{"demo-wordcount", v1alpha1.FrameworkSpark, "root.analytics", 3, "20s"},
	{"demo-clicks", v1alpha1.FrameworkFlink, "root.streaming", 2, "30s"},
	{"demo-report", v1alpha1.FrameworkSpark, "root.analytics", 4, "10s"},
	{"demo-pagerank", v1alpha1.FrameworkSpark, "root.analytics", 4, "25s"},
	{"demo-sessions", v1alpha1.FrameworkFlink, "root.streaming", 3, "20s"},
	{"demo-pi", v1alpha1.FrameworkSpark, "root.analytics", 1, "5s"},
}

// DemoJobNames are the names of the demo's jobs, in submission order.
func DemoJobNames() []string {
	var names []string
	for _, j := range demoJobs {
		names = append(names, j.name)
	}
	return names
}

// Demo submits, through the REST API as any client would, six Spark and Flink jobs and a
// QueueBased Scheduling "demo" of them (17 slots wanted of the bed's 8), then follows it
// live until it ends. On a restart the Scheduling exists already: it is followed, not
// submitted again.
func Demo(ctx context.Context, conn Connection, out io.Writer) error {
	c, err := conn.Client()
	if err != nil {
		return err
	}
	_, err = c.GetScheduling(ctx, "demo")
	switch {
	case apiclient.IsNotFound(err):
		fmt.Fprintln(out, "demo: submitting 6 jobs (4 Spark, 2 Flink) and the QueueBased Scheduling \"demo\" through the REST API")
		var entries []v1alpha1.SchedulingJob
		for _, j := range demoJobs {
			req := apitypes.JobRequest{Name: j.name, Framework: j.framework, Queue: j.queue,
				Application:     v1alpha1.Application{Image: "registry.example/" + j.name + ":1", MainClass: "org.example.Demo", MainApplicationFile: "local:///opt/demo.jar"},
				DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Annotations:     map[string]string{standin.SimDurationAnnotation: j.runFor}}
			if j.framework == v1alpha1.FrameworkFlink {
				req.Application.Version = "v1_20"
			}
			if _, err := c.CreateJob(ctx, req); err != nil && !apiclient.IsConflict(err) {
				return fmt.Errorf("submit %s: %w", j.name, err)
			}
			entries = append(entries, v1alpha1.SchedulingJob{Name: j.name, Replication: j.slots})
		}
		if _, err := c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "demo", TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: entries}); err != nil {
			return fmt.Errorf("submit the demo Scheduling: %w", err)
		}
	case err != nil:
		return err
	default:
		fmt.Fprintln(out, "demo: the Scheduling \"demo\" exists from an earlier run; following it")
	}
	fmt.Fprintln(out, "demo: following it on the change feed (the dashboard shows it too)")
	if err := Watch(ctx, conn, WatchOptions{Names: []string{"demo"}, RetryFor: time.Minute}, out); err != nil {
		return err
	}
	s, err := c.GetScheduling(ctx, "demo")
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "demo: Scheduling demo is %s", s.Status.State)
	if s.Status.StartedAt != nil && s.Status.FinishedAt != nil {
		fmt.Fprintf(&b, " after %s", s.Status.FinishedAt.Sub(s.Status.StartedAt.Time).Round(time.Second))
	}
	b.WriteString("\n")
	for _, j := range s.Status.Jobs {
		fmt.Fprintf(&b, "  %-16s %-9s slots %-12s waited %-6s %s\n", j.Name, j.State, fmt.Sprint(j.Slots), j.WaitTime.Round(time.Second), j.Message)
	}
	b.WriteString("The platform keeps running: Ctrl-C stops it. `slotplane dev -demo` again follows the same Scheduling; delete it to run the demo anew.\n")
	_, err = io.WriteString(out, b.String())
	return err
}
