//go:build integration

package localplatform_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/testobjects"
)

// Two clusters share one Temporal namespace, each with its own installation names. Their
// objects have the same names (the bed, the jobs), their Schedulings not: each cluster's
// bridge, which cancels the running Scheduling workflows whose Scheduling it does not have,
// checks its workflows every second the whole time. Each cluster runs its own jobs, once,
// and no workflow of one is seen, started or cancelled by the other.
func TestInstallations_ShareANamespaceAndRunTheirOwnJobsOnly(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := func(o localplatform.Options) *localplatform.Platform {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		o.Nodes, o.PlainNodes, o.Log, o.WorkflowCheckEvery = 2, 1, log, time.Second
		p, err := localplatform.Start(ctx, o)
		require.NoError(t, err)
		t.Cleanup(func() {
			p.KeepDir = t.Failed()
			require.NoError(t, p.Stop())
		})
		return p
	}
	home := start(localplatform.Options{})
	eu := installation.Names{TaskQueue: "eu", IDPrefix: "eu-1/"}
	away := start(localplatform.Options{Temporal: home.Temporal, Installation: eu})

	ctx := context.Background()
	clusters := map[string]*localplatform.Platform{"home": home, "eu": away}
	for name, p := range clusters {
		require.NoError(t, p.Kube.Create(ctx, testobjects.TestBed("bed").Obj()))
		sched := testobjects.Scheduling("nightly-" + name)
		for _, job := range []string{"a", "b", "c"} {
			require.NoError(t, p.Kube.Create(ctx, testobjects.BatchJob(job).RunFor("3s").Obj()))
			sched.Job(job, 2)
		}
		platformtest.WaitBed(t, p.Kube, 4, 4)
		require.NoError(t, p.Kube.Create(ctx, sched.Obj()))
	}
	for name, p := range clusters {
		key := client.ObjectKey{Namespace: "default", Name: "nightly-" + name}
		var s v1alpha1.Scheduling
		require.Eventually(t, func() bool {
			require.NoError(t, p.Kube.Get(ctx, key, &s))
			return s.Status.State.Ended()
		}, 2*time.Minute, 200*time.Millisecond, "%s's Scheduling did not end", name)
		require.Equal(t, v1alpha1.SchedulingCompleted, s.Status.State, "%s: %s", name, s.Status.Message)
		for _, job := range []string{"a", "b", "c"} {
			var j v1alpha1.BatchJob
			require.NoError(t, p.Kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: job}, &j))
			require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s's job %s", name, job)
			require.Equal(t, int32(1), j.Status.Run, "%s's job %s ran once", name, job)
			require.Len(t, j.Status.History, 1, "%s's job %s ran once", name, job)
			require.Equal(t, "nightly-"+name, j.Status.History[0].Scheduling, "%s's job %s ran for its own Scheduling", name, job)
		}
	}

	// Every workflow of the namespace is one installation's: on its task queues, under its
	// prefix, and for an object of its own cluster.
	resp, err := home.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000})
	require.NoError(t, err)
	seen := map[string]int{}
	for _, e := range resp.GetExecutions() {
		id, queue := e.GetExecution().GetWorkflowId(), e.GetTaskQueue()
		ids, name := installation.Default, "home"
		if strings.HasPrefix(id, eu.IDPrefix) {
			ids, name = eu, "eu"
		}
		require.Contains(t, ids.Queues(), queue, "%s runs on another installation's queue", id)
		require.NotContains(t, id, "nightly-"+map[string]string{"home": "eu", "eu": "home"}[name], "%s names the other cluster's Scheduling", id)
		seen[name]++
	}
	for name := range clusters {
		// A bed, its Admission, a Scheduling and three jobs at least (runs continue as new).
		require.GreaterOrEqual(t, seen[name], 6, "%s's workflows: %v", name, seen)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
