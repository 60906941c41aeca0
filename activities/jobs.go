package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
	"slotplane/operatorapp"
)

// JobKey names a BatchJob.
type JobKey struct {
	Namespace string
	Name      string
}

func (k JobKey) nn() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// JobObservation is what a BatchJob's workflow needs to know of its job.
type JobObservation struct {
	Exists bool
	// Holder is the Scheduling that holds the job ("" when none).
	Holder string
	// Request is the holder's creation request, if it made one.
	Request *v1alpha1.CreationRequest
	// BadRequest says why the creation request annotation could not be read.
	BadRequest string
	Status     v1alpha1.BatchJobStatus
	// Refused lists the fields of the job's wrapped spec that the namespace's policy does
	// not allow ("path: reason"); the job cannot run until they are gone or allowed.
	Refused []string
	// Kill is the kill on the job, if one was asked (v1alpha1.KillAnnotation; one that does
	// not parse is none). It ends the run of the Scheduling it names only: the workflow
	// compares it with Holder.
	Kill *v1alpha1.KillRequest `json:",omitempty"`
}

// ObserveJob reads a BatchJob's claim, creation request and status.
func (a *Activities) ObserveJob(ctx context.Context, in JobKey) (JobObservation, error) {
	var job v1alpha1.BatchJob
	if err := a.Client.Get(ctx, in.nn(), &job); err != nil {
		if apierrors.IsNotFound(err) {
			return JobObservation{}, nil
		}
		return JobObservation{}, fmt.Errorf("get batchjob %s: %w", in.nn(), err)
	}
	obs := JobObservation{Exists: true, Holder: job.Labels[v1alpha1.ActiveSchedulingLabel], Status: job.Status}
	if job.Spec.SparkApplication != nil || job.Spec.FlinkDeployment != nil {
		policy, err := ReadJobPolicy(ctx, a.Client, job.Namespace)
		if err != nil {
			return JobObservation{}, err
		}
		for _, r := range operatorapp.CheckSpec(&job.Spec, policy) {
			obs.Refused = append(obs.Refused, r.String())
		}
	}
	if raw := job.Annotations[v1alpha1.KillAnnotation]; raw != "" {
		var k v1alpha1.KillRequest
		if err := json.Unmarshal([]byte(raw), &k); err != nil {
			slog.Warn("a kill annotation that does not parse is ignored", "job", in.nn().String(), "err", err)
		} else {
			obs.Kill = &k
		}
	}
	req, err := v1alpha1.CreationRequestOf(job.Annotations)
	switch {
	case err != nil:
		obs.BadRequest = err.Error()
	case req != nil && req.Scheduling == obs.Holder && req.SchedulingUID != "":
		// A request of a Scheduling deleted and made again under its name is the old one's:
		// the new Scheduling asks afresh.
		sched := &metav1.PartialObjectMetadata{}
		sched.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Scheduling"))
		err := fromWatchCache(ctx, a.Client, types.NamespacedName{Namespace: in.Namespace, Name: req.Scheduling}, sched)
		switch {
		case apierrors.IsNotFound(err):
			obs.BadRequest = fmt.Sprintf("the creation request is of scheduling %s, which is gone", req.Scheduling)
		case err != nil:
			return JobObservation{}, fmt.Errorf("get scheduling %s/%s: %w", in.Namespace, req.Scheduling, err)
		case string(sched.UID) != req.SchedulingUID:
			obs.BadRequest = fmt.Sprintf("the creation request is of an earlier scheduling named %s (uid %s, not %s)", req.Scheduling, req.SchedulingUID, sched.UID)
		default:
			obs.Request = req
		}
	default:
		obs.Request = req
	}
	return obs, nil
}
