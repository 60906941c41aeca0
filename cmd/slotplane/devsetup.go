package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/api"
	"slotplane/apiclient"
	"slotplane/crds/v1alpha1"
	"slotplane/examples"
	"slotplane/internal/appsim"
)

// startup prints `slotplane dev`'s progress: one numbered line per step, and how long the
// step before took.
type startup struct {
	total, n int
	name     string
	since    time.Time
}

func (s *startup) begin(name string) {
	s.end()
	s.n++
	s.name, s.since = name, time.Now()
	fmt.Printf("[%d/%d] %s ...\n", s.n, s.total, name)
}

func (s *startup) end() {
	if s.name != "" {
		fmt.Printf("      done in %.1fs\n", time.Since(s.since).Seconds())
		s.name = ""
	}
}

// devDefaults creates, on the platform's first start, the test bed "bed" (2 slots of 2 CPUs
// and 8 GiB on every test bed node) and open queues. A marker in the state folder keeps a
// later start from bringing back what the user deleted.
func devDefaults(ctx context.Context, cl client.Client, stateDir, nodeLabel string) error {
	marker := filepath.Join(stateDir, "defaults-created")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	queues, err := examples.Files.ReadFile("dev-queues.xml")
	if err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"},
			Data: map[string]string{v1alpha1.QueuesConfigMapKey: string(queues)}},
		&v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default"},
			Spec: v1alpha1.TestBedSpec{NodeLabel: nodeLabel, SlotsPerNode: 2, ResourcesPerSlot: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}}},
	}
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the default %T %s: %w", o, o.GetName(), err)
		}
	}
	return os.WriteFile(marker, []byte("the default test bed and queues were created; delete this file to create them again\n"), 0o644)
}

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

// runDemo submits, through the REST API as any client would, six Spark and Flink jobs and a
// QueueBased Scheduling "demo" of them (17 slots wanted of the bed's 8), then follows it
// live until it ends. On a restart the Scheduling exists already: it is followed, not
// submitted again.
func runDemo(ctx context.Context, server, token string) error {
	c, err := apiclient.New(server, token)
	if err != nil {
		return err
	}
	_, err = c.GetScheduling(ctx, "demo")
	switch {
	case apiclient.IsNotFound(err):
		fmt.Println("demo: submitting 6 jobs (4 Spark, 2 Flink) and the QueueBased Scheduling \"demo\" through the REST API")
		var entries []v1alpha1.SchedulingJob
		for _, j := range demoJobs {
			req := api.JobRequest{Name: j.name, Framework: j.framework, Queue: j.queue,
				Application:     v1alpha1.Application{Image: "registry.example/" + j.name + ":1", MainClass: "org.example.Demo", MainApplicationFile: "local:///opt/demo.jar"},
				DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Annotations:     map[string]string{appsim.SimDurationAnnotation: j.runFor}}
			if j.framework == v1alpha1.FrameworkFlink {
				req.Application.Version = "v1_20"
			}
			if _, err := c.CreateJob(ctx, req); err != nil && !apiclient.IsConflict(err) {
				return fmt.Errorf("submit %s: %w", j.name, err)
			}
			entries = append(entries, v1alpha1.SchedulingJob{Name: j.name, Replication: j.slots})
		}
		if _, err := c.CreateScheduling(ctx, api.SchedulingRequest{Name: "demo", TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: entries}); err != nil {
			return fmt.Errorf("submit the demo Scheduling: %w", err)
		}
	case err != nil:
		return err
	default:
		fmt.Println("demo: the Scheduling \"demo\" exists from an earlier run; following it")
	}
	fmt.Println("demo: following it on the change feed (the dashboard shows it too)")
	if err := watchCommand(ctx, []string{"demo", "-server", server, "-token", token}, os.Stdout); err != nil {
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
	fmt.Print(b.String())
	return nil
}
