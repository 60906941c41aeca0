//go:build integration

package workflows_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/workflows"
)

// A worker lost after its job's workflow asked for the application, before that workflow
// task completed (the real API server and Temporal server, the real activities): the next
// attempt finds the application made, and the run's start, from which the waits count the
// executors' placements (AppKey.Since), is the moment the first attempt asked for it, not
// the later attempt's clock. Exactly one application exists.
func TestBatchJobWorkflow_AWorkerLostAfterAskingForTheApplicationKeepsTheMomentItAsked(t *testing.T) {
	cluster := localcluster.New(t, localcluster.Options{})
	cl, err := kubeclient.Live(cluster.Config)
	require.NoError(t, err)
	_, tc := temporaltest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	bed := &v1alpha1.TestBed{
		ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default"},
		Spec: v1alpha1.TestBedSpec{NodeLabel: localcluster.DefaultNodeLabel, SlotsPerNode: 2,
			ResourcesPerSlot: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
	}
	require.NoError(t, cl.Create(ctx, bed))
	require.NoError(t, slotslices.Put(ctx, cl, bed, []v1alpha1.SlotStatus{
		{Position: 0, NodeName: "node-00", NodeID: "00", State: v1alpha1.SlotFree},
		{Position: 1, NodeName: "node-01", NodeID: "01", State: v1alpha1.SlotFree},
	}))
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("wordcount").Obj()))
	acts := &activities.Activities{Client: cl, Temporal: tc}
	_, err = acts.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "nightly", Names: []string{"wordcount"}})
	require.NoError(t, err)
	granted := metav1.NewMicroTime(time.Now())
	req := v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{1, 0}, Run: 1, GrantedAt: &granted}
	require.NoError(t, acts.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "wordcount", Request: req}))

	lost := startLosingWorker(t, tc, "job-lost", "CreateApplication", workflows.BatchJobWorkflow, acts)
	id := installation.Default.BatchJobID("default", "wordcount")
	_, err = tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "job-lost", WorkflowTaskTimeout: 2 * time.Second},
		workflows.BatchJobWorkflow, workflows.BatchJobInput{Namespace: "default", Name: "wordcount"})
	require.NoError(t, err)
	defer func() { _ = tc.TerminateWorkflow(context.Background(), id, "", "test over") }()

	// The attempt after the loss goes on to wait for the executors. The lost attempt ends in
	// the history as a failed workflow task (the panic) or a timed-out one: both happen.
	var lostAt time.Time
	var lostAs enumspb.EventType
	var wait *activities.AppKey
	var events []string
	// The condition runs on a goroutine of its own, where require must not stop the test:
	// a wait's input that does not decode ends the polling and fails below.
	var decodeErr error
	require.Eventually(t, func() bool {
		if !lost.Load() {
			return false
		}
		lostAt, wait, events, decodeErr = time.Time{}, nil, nil, nil
		it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return false
			}
			events = append(events, ev.GetEventTime().AsTime().Format("15:04:05.000000 ")+ev.GetEventType().String())
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				if lostAt.IsZero() {
					lostAt, lostAs = ev.GetEventTime().AsTime(), ev.GetEventType()
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				attrs := ev.GetActivityTaskScheduledEventAttributes()
				if attrs.GetActivityType().GetName() != "WaitPlaced" || wait != nil {
					continue
				}
				var key activities.AppKey
				if decodeErr = converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), &key); decodeErr != nil {
					return true
				}
				wait = &key
			}
		}
		return wait != nil
	}, time.Minute, 50*time.Millisecond, "the job's workflow never went on to wait for its executors after the worker was lost")
	require.NoError(t, decodeErr, "the input of the job's WaitPlaced")
	require.False(t, lostAt.IsZero(), "no workflow task of the history failed or timed out: the worker was not lost in it\n%s", strings.Join(events, "\n"))
	t.Logf("the lost attempt ended as %s at %s", lostAs, lostAt.Format(time.RFC3339Nano))

	var apps sparkv1beta2.SparkApplicationList
	require.NoError(t, cl.List(ctx, &apps, ctrlclient.InNamespace("default")))
	require.Len(t, apps.Items, 1, "the retry made a second application")
	asked, err := time.Parse(time.RFC3339Nano, apps.Items[0].Annotations[v1alpha1.CreatedAtAnnotation])
	require.NoError(t, err)
	require.True(t, asked.Before(lostAt), "the application was asked for at %s, after the lost task ended at %s", asked, lostAt)
	require.WithinDuration(t, asked, wait.Since, time.Microsecond,
		"the waits count placements from %s, not from when the application was asked for (%s); the lost task ended at %s\n%s",
		wait.Since, asked, lostAt, strings.Join(events, "\n"))
	require.Equal(t, apps.Items[0].Name, wait.App.Name)
}
