package activities

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
)

// WriteJobStatusInput is a job's whole status as its workflow sees it.
type WriteJobStatusInput struct {
	Job    JobKey
	Status v1alpha1.BatchJobStatus
}

// WriteJobStatus writes a BatchJob's status; a job that is gone is fine. The conditions the
// workflow sets replace theirs by type; any other condition on the job stays.
//
// The job's queue (status.queue) is Admission's, not the workflow's: the one on the object
// stays, and goes when the job is Ready.
//
// A status that says who holds the job (Ready: nobody; InQueue: a Scheduling) is written
// only while that is so: the workflow decided on what it read before, and a claim since has
// written InQueue itself or nudges the workflow (ClaimJobs), a release nudges it. Writing the
// older picture over the claim's would show a held job as Ready until its run began.
func (a *Activities) WriteJobStatus(ctx context.Context, in WriteJobStatusInput) error {
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var job v1alpha1.BatchJob
		if err := a.copyForUpdate(ctx, in.Job.nn(), &job, &attempt); err != nil {
			return err
		}
		if s := in.Status.State; (s == v1alpha1.JobReady || s == v1alpha1.JobInQueue) && job.Labels[v1alpha1.ActiveSchedulingLabel] != in.Status.Scheduling {
			if attempt == 1 {
				return errCheckAgain // the cache's copy may lag: decide on etcd's
			}
			return nil
		}
		st := in.Status
		st.ObservedGeneration = job.Generation
		// The queue is Admission's to write (RecordQueues); it goes with the holder.
		st.Queue = job.Status.Queue
		if st.State == v1alpha1.JobReady {
			st.Queue = ""
		}
		st.Conditions = job.Status.Conditions
		for _, c := range in.Status.Conditions {
			meta.SetStatusCondition(&st.Conditions, c)
		}
		job.Status = st
		return a.Client.Status().Update(ctx, &job)
	})
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("write status of batchjob %s: %w", in.Job.nn(), err)
	}
	return nil
}
