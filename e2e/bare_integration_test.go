//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/localplatform/standin"
	"slotplane/operatorapp"
)

// bareLabel marks the applications (and, through the spec's labels, the pods) of one bare
// run.
const bareLabel = "slotplane.io/bench-bare"

// bareRun is n one-second Spark applications run with no slotplane in the way, on the same
// platform at the same moment as the Schedulings they are set against: the floor that the
// platform itself (the operators' stand-in, kube-scheduler, kwok, the API server) puts
// under any job. What a Scheduling's run takes beyond it is slotplane's.
type bareRun struct {
	// n applications ran, at most at of them at a time.
	n, at    int
	makespan time.Duration
	// cpu is the CPU time the whole machine spent from the first creation to the last end.
	cpu time.Duration
	// endToStart is, for each application started when another ended, from that end seen
	// to its own executor bound to a node (slotplane's "running": every executor placed).
	endToStart []time.Duration
	// createToPlaced is, per application, from its creation to its executor bound.
	createToPlaced []time.Duration
}

// runBare runs n applications of one driver and one executor, each 1 s long as the
// stand-in counts it (from its executors running, like a Scheduling's jobs), at most `at`
// at a time: the bench itself is the scheduler, making the next application the moment it
// sees one end (SUCCEEDING or COMPLETED, the end slotplane takes too). The pods go to the
// plain nodes through the default profile: no slots, no ghosts, no queue. Everything is
// seen through watches, as the worker sees it; the applications are deleted at the end.
func runBare(b *testing.B, p *platformtest.Platform, name string, n, at int) bareRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wc, err := client.NewWithWatch(p.Cluster.Config, client.Options{Scheme: p.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	sel := client.MatchingLabels{bareLabel: name}
	apps, err := wc.Watch(ctx, &sparkv1beta2.SparkApplicationList{}, client.InNamespace("default"), sel)
	if err != nil {
		b.Fatal(err)
	}
	defer apps.Stop()
	pods, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace("default"), sel)
	if err != nil {
		b.Fatal(err)
	}
	defer pods.Stop()
	defer func() {
		if err := p.Client.DeleteAllOf(context.Background(), &sparkv1beta2.SparkApplication{}, client.InNamespace("default"), sel); err != nil {
			b.Errorf("delete the bare run's applications: %v", err)
		}
	}()

	created, ended, placed := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	after := map[string]string{} // an application -> the one whose end started it
	next := 0
	start := func(pred string) {
		app := bareApp(fmt.Sprintf("%s-%02d", name, next), name)
		next++
		created[app.Name] = time.Now()
		if pred != "" {
			after[app.Name] = pred
		}
		if err := p.Client.Create(ctx, app); err != nil {
			b.Fatal(err)
		}
	}
	// seeBound notes when an application's executor was first seen bound to a node.
	seeBound := func(ev watch.Event) {
		pod, isPod := ev.Object.(*corev1.Pod)
		if !isPod || pod.Spec.NodeName == "" || pod.Labels[standin.RoleLabel] != standin.RoleExecutor {
			return
		}
		if app := pod.Annotations[standin.AppAnnotation]; placed[app].IsZero() {
			placed[app] = time.Now()
		}
	}
	busyFrom, busyErr := machineBusy()
	first := time.Now()
	var lastEnd time.Time // ends are seen in order: the last seen is the run's end
	for range min(at, n) {
		start("")
	}
	for len(ended) < n {
		select {
		case ev, ok := <-apps.ResultChan():
			if !ok {
				b.Fatalf("the watch of the bare run's applications ended after %d of %d", len(ended), n)
			}
			app, isApp := ev.Object.(*sparkv1beta2.SparkApplication)
			if !isApp || ev.Type == watch.Deleted {
				continue
			}
			out := operatorapp.SparkOutcome(app)
			if _, done := ended[app.Name]; done || !out.Terminal {
				continue
			}
			if !out.Succeeded {
				b.Fatalf("bare application %s ended %s: %s", app.Name, out.State, out.Message)
			}
			lastEnd = time.Now()
			ended[app.Name] = lastEnd
			if next < n {
				start(app.Name)
			}
		case ev, ok := <-pods.ResultChan():
			if !ok {
				b.Fatalf("the watch of the bare run's pods ended after %d of %d", len(ended), n)
			}
			seeBound(ev)
		case <-ctx.Done():
			b.Fatalf("the bare run did not end: %d of %d applications ended", len(ended), n)
		}
	}
	// A bound executor's event may still wait behind the last end's: take what came.
	for drained := false; !drained; {
		select {
		case ev, ok := <-pods.ResultChan():
			seeBound(ev)
			drained = !ok
		default:
			drained = true
		}
	}
	for app := range ended {
		if _, ok := placed[app]; !ok {
			b.Fatalf("bare application %s ended without its executor seen bound", app)
		}
	}
	busyTo, err := machineBusy()
	if err = errors.Join(busyErr, err); err != nil {
		b.Fatal(err)
	}
	r := bareRun{n: n, at: at, makespan: lastEnd.Sub(first), cpu: busyTo - busyFrom}
	for app, t := range placed {
		r.createToPlaced = append(r.createToPlaced, t.Sub(created[app]))
		if pred, ok := after[app]; ok {
			r.endToStart = append(r.endToStart, t.Sub(ended[pred]))
		}
	}
	return r
}

// bareApp is one application of a bare run: a driver and an executor that ask for little
// (eight of each fit on the two plain nodes), marked with the run's label.
func bareApp(name, run string) *sparkv1beta2.SparkApplication {
	one := int32(1)
	labels := map[string]string{bareLabel: run}
	pod := sparkv1beta2.SparkPodSpec{Memory: "512m", Labels: labels}
	return &sparkv1beta2.SparkApplication{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels,
			Annotations: map[string]string{standin.SimDurationAnnotation: "1s"}},
		Spec: sparkv1beta2.SparkApplicationSpec{
			Type: sparkv1beta2.SparkApplicationTypeScala, SparkVersion: "3.5.3", Image: "registry.example/bench:1",
			MainClass: "org.example.Bench", MainApplicationFile: "local:///opt/bench.jar",
			RestartPolicy: sparkv1beta2.RestartPolicy{Type: sparkv1beta2.RestartPolicyNever},
			Driver:        sparkv1beta2.DriverSpec{SparkPodSpec: pod, CoreRequest: "250m"},
			Executor:      sparkv1beta2.ExecutorSpec{SparkPodSpec: pod, Instances: &one, CoreRequest: "250m"},
		},
	}
}

// summary is the bare run's figures, for the bench's breakdown.
func (r bareRun) summary() string {
	return fmt.Sprintf("%d bare applications (no slotplane), %d at a time: makespan %s, CPU %.0f ms per run\n"+
		"  created -> executor bound                  p50 %6.0f ms  p99 %6.0f ms  (%d applications)\n"+
		"  one's end -> the next one's executor bound p50 %6.0f ms  p99 %6.0f ms  (%d hand-overs)",
		r.n, r.at, r.makespan.Round(time.Millisecond), ms(r.cpu)/float64(r.n), ms(percentile(r.createToPlaced, 50)), ms(percentile(r.createToPlaced, 99)), len(r.createToPlaced),
		ms(percentile(r.endToStart, 50)), ms(percentile(r.endToStart, 99)), len(r.endToStart))
}
