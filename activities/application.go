package activities

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/operatorapp"
)

// CreateApplicationInput is one run of a job.
type CreateApplicationInput struct {
	Job     JobKey
	Request v1alpha1.CreationRequest
}

// CreatedApplication is the application CreateApplication made, and when.
type CreatedApplication struct {
	v1alpha1.ApplicationRef
	// CreatedAt is when slotplane asked for the application (v1alpha1.CreatedAtAnnotation),
	// also when an earlier attempt did: the job's workflow retries this on a worker that
	// came back from a kill, seconds later. Zero when the application does not say.
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// CreateApplication creates the run's SparkApplication or FlinkDeployment, owned by the
// BatchJob. An application of that name that exists already is the one a previous attempt
// created: success, with that attempt's moment.
func (a *Activities) CreateApplication(ctx context.Context, in CreateApplicationInput) (CreatedApplication, error) {
	// The job (with its wrapped spec), the test bed and the namespace's job policy are read
	// side by side: each read is a round trip to the API server, and this activity is on
	// the path from every grant to the job's pods. The job and the policy come from the API
	// server's watch cache: the spec of a moment ago builds the same application.
	var job v1alpha1.BatchJob
	var bed *bedSlots
	var policy operatorapp.JobPolicy
	var jobErr, bedErr, policyErr error
	var reads sync.WaitGroup
	reads.Go(func() { jobErr = fromWatchCache(ctx, a.Client, in.Job.nn(), &job) })
	reads.Go(func() {
		// A slot missing from a copy that lags (its node just came back to the bed) would
		// fail the run for good: etcd decides (readBed).
		bedKey := types.NamespacedName{Namespace: in.Job.Namespace, Name: in.Request.TestBed}
		bed, bedErr = a.readBed(ctx, bedKey, in.Request.Slots, func(b *bedSlots) bool { _, missing := slotNodes(b, in.Request.Slots); return missing < 0 })
	})
	reads.Go(func() { policy, policyErr = ReadJobPolicy(ctx, a.Client, in.Job.Namespace) })
	reads.Wait()
	switch {
	case apierrors.IsNotFound(jobErr):
		return CreatedApplication{}, nonRetryable(ErrNotHeld, "job %s is gone", in.Job.nn())
	case jobErr != nil:
		return CreatedApplication{}, fmt.Errorf("get batchjob %s: %w", in.Job.nn(), jobErr)
	case apierrors.IsNotFound(bedErr):
		return CreatedApplication{}, nonRetryable(ErrInvalidJob, "test bed %s does not exist", in.Request.TestBed)
	case bedErr != nil:
		return CreatedApplication{}, fmt.Errorf("get testbed %s: %w", in.Request.TestBed, bedErr)
	case policyErr != nil:
		return CreatedApplication{}, policyErr
	}
	nodes, missing := slotNodes(bed, in.Request.Slots)
	if missing >= 0 {
		return CreatedApplication{}, nonRetryable(ErrInvalidJob, "test bed %s has no slot %d", bed.tb.Name, missing)
	}
	var err error
	run := operatorapp.Run{Job: &job, Request: in.Request, SlotSize: bed.tb.Spec.ResourcesPerSlot, Nodes: nodes, Policy: policy}
	var obj client.Object
	switch job.Spec.Framework {
	case v1alpha1.FrameworkSpark:
		obj, err = operatorapp.Spark(run)
	case v1alpha1.FrameworkFlink:
		obj, err = operatorapp.Flink(run)
	default:
		err = fmt.Errorf("%w: unknown framework %q", operatorapp.ErrInvalid, job.Spec.Framework)
	}
	if err != nil {
		return CreatedApplication{}, nonRetryable(ErrInvalidJob, "%v", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if err := controllerutil.SetControllerReference(&job, obj, a.Client.Scheme()); err != nil {
		return CreatedApplication{}, fmt.Errorf("own application by job %s: %w", job.Name, err)
	}
	notes := obj.GetAnnotations()
	if notes == nil {
		notes = map[string]string{}
	}
	notes[v1alpha1.CreatedAtAnnotation] = a.now().UTC().Format(time.RFC3339Nano)
	obj.SetAnnotations(notes)
	err = a.Client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		err = a.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	}
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return CreatedApplication{}, nonRetryable(ErrInvalidJob, "the API server refused the application: %v", err)
		}
		return CreatedApplication{}, fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	made := CreatedApplication{ApplicationRef: v1alpha1.ApplicationRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: obj.GetName(), UID: obj.GetUID()}}
	if at, err := time.Parse(time.RFC3339Nano, obj.GetAnnotations()[v1alpha1.CreatedAtAnnotation]); err == nil {
		made.CreatedAt = at
	}
	return made, nil
}

// slotNodes are the nodes of the test bed's slots at positions, each once, in the order of
// positions; missing is a position the bed has no slot at (-1: none).
func slotNodes(b *bedSlots, positions []int32) (nodes []string, missing int32) {
	for _, pos := range positions {
		s, ok := b.slots[pos]
		if !ok {
			return nil, pos
		}
		node := s.NodeName
		if !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
		}
	}
	return nodes, -1
}

// DeleteApplication deletes a job's application; one that is gone already is fine.
func (a *Activities) DeleteApplication(ctx context.Context, in AppKey) error {
	var obj client.Object
	switch in.App.Kind {
	case sparkv1beta2.SparkApplicationKind:
		obj = &sparkv1beta2.SparkApplication{}
	case flinkv1beta1.FlinkDeploymentKind:
		obj = &flinkv1beta1.FlinkDeployment{}
	default:
		return nil // nothing slotplane could have created
	}
	obj.SetNamespace(in.Namespace)
	obj.SetName(in.App.Name)
	policy := metav1.DeletePropagationBackground
	if err := a.Client.Delete(ctx, obj, &client.DeleteOptions{PropagationPolicy: &policy}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s/%s: %w", in.App.Kind, in.Namespace, in.App.Name, err)
	}
	return nil
}
