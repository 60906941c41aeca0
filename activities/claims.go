package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/queue"
	"slotplane/slots"
)

// ClaimInput names a Scheduling and the objects it claims or releases.
type ClaimInput struct {
	Namespace  string
	Scheduling string
	// Names are BatchJobs.
	Names []string
	// User and Groups are the Scheduling's (spec.user, spec.groups). A job of another user
	// is claimed only if User may submit for that user; an empty User claims any job (the
	// admission policy lets only those who may submit for anyone leave it empty).
	User   string
	Groups []string
	// Queue is the Scheduling's spec.queue: a job that asks for no queue of its own asks for
	// this one. The InQueue status a claim writes shows the queue asked for (status.queue),
	// which is where Admission places the job unless a placement rule says otherwise; then
	// Admission writes the queue it chose (RecordQueues).
	Queue string `json:",omitempty"`
}

// ClaimResult says which objects the Scheduling holds now and which it could not take.
type ClaimResult struct {
	Claimed []string
	// Queued are the claimed jobs whose status says InQueue for this Scheduling already:
	// the claim wrote it, as the job's workflow would have (ClaimJobs). Their workflows need
	// no nudge; the other claimed jobs' do. Empty, every claimed job's workflow is nudged.
	Queued []string `json:",omitempty"`
	// Lost are objects another Scheduling holds.
	Lost []LostClaim
	// Missing are objects that do not exist.
	Missing []string
}

// LostClaim is an object held by another Scheduling, or (Forbidden) one the Scheduling's
// user may not run.
type LostClaim struct {
	Name   string
	Holder string
	// Forbidden says why the Scheduling may not claim the job (its user's rights).
	Forbidden string
}

// Complete is true when every object was claimed.
func (r ClaimResult) Complete() bool { return len(r.Lost) == 0 && len(r.Missing) == 0 }

// Unqueued are the claimed jobs of names whose workflows must be nudged to show the claim:
// those whose InQueue status the claim did not write itself (Queued). A thousand resting
// jobs cost their workflows nothing until each job's creation request comes.
func (r ClaimResult) Unqueued(names []string) []string {
	if len(r.Queued) == 0 {
		return names
	}
	queued := make(map[string]bool, len(r.Queued))
	for _, n := range r.Queued {
		queued[n] = true
	}
	var out []string
	for _, n := range names {
		if !queued[n] {
			out = append(out, n)
		}
	}
	return out
}

// Loss says which jobs kept a claim from completing, and that the Scheduling released the
// ones it got.
func (r ClaimResult) Loss() string {
	var parts []string
	for _, l := range r.Lost {
		if l.Forbidden != "" {
			parts = append(parts, fmt.Sprintf("job %s may not be run by this scheduling: %s", l.Name, l.Forbidden))
			continue
		}
		parts = append(parts, fmt.Sprintf("job %s is held by scheduling %s", l.Name, l.Holder))
	}
	for _, m := range r.Missing {
		parts = append(parts, fmt.Sprintf("job %s does not exist", m))
	}
	return strings.Join(parts, "; ") + "; released everything"
}

// ClaimJobs puts the Scheduling's active-scheduling label on each BatchJob that no other
// Scheduling holds. Each label is written with optimistic concurrency, so of two Schedulings
// racing for a job exactly one wins; the caller releases everything when it lost any.
//
// Jobs are claimed claimWidth at a time. A job is first read from the worker's copy, else
// from the API server's watch cache, all of them in one List: a free job's label write is a
// patch of the label alone that carries the resourceVersion read, so a stale copy only
// conflicts, and the retry reads etcd. A job the copy shows held (by anyone), forbidden or
// missing is read again from etcd before that decides anything. So claiming costs about
// one request per job (and one more for the InQueue status, below), which the client's
// rate limit (kubeclient.DefaultQPS) paces.
//
// A claimed job that rests (Ready, no application, no creation request: a fresh job, or one
// released since its last run) also gets its InQueue status here, one more request, written
// on the object as claimed so that any write between the two conflicts and the job is left
// to its workflow. That is what the job's workflow would write when nudged, after a read of
// its own: a 1,000-job Scheduling would otherwise start a thousand workflow tasks and some
// 3,000 requests before its first job could be asked for (the first ran 47 s after the
// Scheduling was created). The job's workflow reads the status afresh at its next look; a
// Ready or InQueue status it meant to write on an older picture is not written
// (WriteJobStatus). The status shows the queue the namespace's placement rules put the job
// in (placementRules), which Admission then need not write again.
func (a *Activities) ClaimJobs(ctx context.Context, in ClaimInput) (ClaimResult, error) {
	type outcome struct {
		holder, forbidden string
		missing, queued   bool
	}
	outcomes := make([]outcome, len(in.Names))
	var mu sync.Mutex
	mayRun := map[string]string{} // a job user -> why in.User may not run their jobs ("": may)
	may := func(owner string) (string, error) {
		mu.Lock()
		why, checked := mayRun[owner]
		mu.Unlock()
		if checked {
			return why, nil
		}
		why, err := a.maySubmitFor(ctx, in.User, in.Groups, owner)
		if err == nil {
			mu.Lock()
			mayRun[owner] = why
			mu.Unlock()
		}
		return why, err
	}
	cached := a.cachedJobs(ctx, in.Namespace, len(in.Names))
	rules := a.placementRules(ctx, in.Namespace)
	err := eachOf(ctx, in.Names, func(i int, name string) error {
		key := types.NamespacedName{Namespace: in.Namespace, Name: name}
		var o outcome
		var obj *v1alpha1.BatchJob
		attempt := 0
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			o = outcome{}
			obj = &v1alpha1.BatchJob{}
			if c, ok := cached[name]; ok && attempt == 0 {
				attempt = 1 // the watch cache's copy: the next attempt reads etcd
				c.DeepCopyInto(obj)
			} else if err := getForUpdate(ctx, a.Client, key, obj, &attempt); err != nil {
				if apierrors.IsNotFound(err) {
					o.missing = true
					return nil
				}
				return err
			}
			base := obj.DeepCopy()
			labels := obj.GetLabels()
			o.holder = labels[v1alpha1.ActiveSchedulingLabel]
			if o.holder == "" {
				if owner := obj.Spec.User; in.User != "" && owner != "" && owner != in.User {
					why, err := may(owner)
					if err != nil {
						return err
					}
					o.forbidden = why
				}
			}
			if o.holder != "" || o.forbidden != "" {
				if attempt == 1 {
					return errCheckAgain // the cache's copy may lag: decide on etcd's
				}
				return nil
			}
			if labels == nil {
				labels = map[string]string{}
			}
			labels[v1alpha1.ActiveSchedulingLabel] = in.Scheduling
			obj.SetLabels(labels)
			// A kill spoke of an earlier claim's run (perhaps of a Scheduling of this name
			// since deleted): the new claim starts clean.
			annotations := obj.GetAnnotations()
			delete(annotations, v1alpha1.KillAnnotation)
			obj.SetAnnotations(annotations)
			o.holder = in.Scheduling
			// Only the label and the annotation, on the resourceVersion read: a race
			// conflicts, and a copy without the wrapped spec (the worker's) loses nothing.
			return a.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		})
		if err != nil {
			return fmt.Errorf("claim %s for scheduling %s: %w", key, in.Scheduling, err)
		}
		if o.holder == in.Scheduling && !o.missing {
			o.queued = a.queueClaimed(ctx, obj, in.Scheduling, in.Queue, rules)
		}
		outcomes[i] = o
		return nil
	})
	if err != nil {
		return ClaimResult{}, err
	}
	var res ClaimResult
	for i, name := range in.Names {
		switch o := outcomes[i]; {
		case o.missing:
			res.Missing = append(res.Missing, name)
		case o.forbidden != "":
			res.Lost = append(res.Lost, LostClaim{Name: name, Forbidden: o.forbidden})
		case o.holder == in.Scheduling:
			res.Claimed = append(res.Claimed, name)
			if o.queued {
				res.Queued = append(res.Queued, name)
			}
		default:
			res.Lost = append(res.Lost, LostClaim{Name: name, Holder: o.holder})
		}
	}
	return res, nil
}

// queueClaimed writes the InQueue status of a job just claimed (job, as the API server
// returned it) if the job rests, and says whether its status says InQueue for scheduling
// now. A job that does not rest (a run of an earlier claim still has its application or
// request), or whose write fails or conflicts, is left to its workflow: false.
//
// The status shows the queue the job asks for (its own spec.queue, else the Scheduling's:
// fallback) as the placement rules place it, when there are rules to run (rules, nil when
// the allocation file cannot be read or does not parse: then the queue asked for). A
// Scheduling passes what the status shows on to Admission (AdmissionRequest.Shown), which
// writes a job's queue only where its placement differs: a 1,000-job Scheduling's jobs were
// written a third time each, a moment after the claim, to say the same queue, and jobs that
// ask for no queue or one the rules change still were, until the claim ran the rules too.
func (a *Activities) queueClaimed(ctx context.Context, job *v1alpha1.BatchJob, scheduling, fallback string, rules *queue.Allocations) bool {
	st := job.Status
	if st.State == v1alpha1.JobInQueue && st.Scheduling == scheduling {
		return true // an earlier attempt wrote it
	}
	_, requested := job.Annotations[v1alpha1.CreationRequestAnnotation]
	if (st.State != v1alpha1.JobReady && st.State != "") || st.Scheduling != "" || st.Application != nil || requested {
		return false
	}
	queued := metav1.Now()
	asked := job.Spec.Queue
	if asked == "" {
		asked = fallback
	}
	if rules != nil {
		// Admission places the request the same way (Admitter.Request); a job the rules
		// refuse is refused there, and shows the queue it asked for until then.
		if p, err := rules.PlaceJob(asked, job.Spec.User, job.Spec.Groups); err == nil {
			asked = p.Queue
		}
	}
	job.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobInQueue, Scheduling: scheduling, QueuedAt: &queued, Queue: asked,
		ObservedGeneration: job.Generation, Conditions: st.Conditions}
	return a.Client.Status().Update(ctx, job) == nil
}

// placementRules are the namespace's queue placement rules as its allocation file has them
// now (the built-in defaults without a file), for a claim to show each job in the queue
// Admission will place it in. The file is read from the API server's watch cache and parsed
// once per claim activity. nil when it cannot be read or does not parse: Admission keeps
// its last good file then, which the claim does not know. A file that changed since
// Admission last loaded it may place some jobs elsewhere; Admission writes those, as it
// writes every placement that differs from what the status shows.
func (a *Activities) placementRules(ctx context.Context, namespace string) *queue.Allocations {
	files, _, err := readAllocationFiles(ctx, a.Client, AllocationFileRef{Namespace: namespace, ConfigMap: v1alpha1.QueuesConfigMap},
		&client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	if err != nil {
		return nil
	}
	rules, err := queue.ParseConfig(files) // neither file: the defaults' rules
	if err != nil {
		return nil
	}
	return rules
}

// cachedJobs is every BatchJob of the namespace as the worker's copy has them (without their
// wrapped specs), else as the API server's watch cache has them, in one request, when there
// are several to read; none if the List fails (each is then read on its own). The objects
// are shared with the copy: read them, never change them.
//
// A Scheduling claims its jobs a hundred at a time (one activity each), so a 1,000-job
// Scheduling listed every job ten times over from the watch cache before its first job could
// be asked for, each List some 5 MB to encode and decode.
func (a *Activities) cachedJobs(ctx context.Context, namespace string, wanted int) map[string]*v1alpha1.BatchJob {
	if wanted < 2 {
		return nil
	}
	var list v1alpha1.BatchJobList
	var err error
	if r := a.Changes.reader(v1alpha1.GroupVersion.WithKind("BatchJob")); r != nil {
		err = r.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy)
	} else {
		err = a.Client.List(ctx, &list, &client.ListOptions{Namespace: namespace, Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	}
	if err != nil {
		return nil
	}
	out := make(map[string]*v1alpha1.BatchJob, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// errCheckAgain is a conflict in all but name: a read from the watch cache that would decide
// on its own is made again from etcd (getForUpdate's second attempt).
var errCheckAgain = apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("batchjobs").GroupResource(), "", fmt.Errorf("read again from etcd"))

// claimWidth is how many jobs ClaimJobs and ReleaseJobs handle at once. One at a time, a
// 1,000-job Scheduling spent 15 s claiming its jobs before the first could be asked for;
// the client's rate limit (kubeclient.DefaultQPS) bounds the rest.
const claimWidth = 8

// eachOf calls f for every item, claimWidth at a time, and returns the first error.
func eachOf[T any](ctx context.Context, items []T, f func(i int, item T) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(claimWidth)
	for i, item := range items {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return f(i, item) })
	}
	return g.Wait()
}

// maySubmitFor asks the API server whether user (with groups) may submit jobs for owner:
// impersonate on the user, or slotplane's own submit-as on users.slotplane.io. It returns
// why not, or "" if it may.
func (a *Activities) maySubmitFor(ctx context.Context, user string, groups []string, owner string) (string, error) {
	for _, attrs := range []authzv1.ResourceAttributes{
		{Group: "", Resource: "users", Verb: "impersonate", Name: owner},
		{Group: v1alpha1.GroupName, Resource: "users", Verb: "submit-as", Name: owner},
	} {
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}
		if err := a.Client.Create(ctx, sar); err != nil {
			return "", fmt.Errorf("ask whether %s may submit for %s: %w", user, owner, err)
		}
		if sar.Status.Allowed {
			return "", nil
		}
	}
	return fmt.Sprintf("it runs as user %s, who may not run jobs of user %s (that takes impersonate on users %s, or submit-as on users.slotplane.io)", user, owner, owner), nil
}

// ReleaseJobs removes the Scheduling's label and creation request from its BatchJobs; jobs
// another Scheduling holds, or that are gone, are left alone.
func (a *Activities) ReleaseJobs(ctx context.Context, in ClaimInput) error {
	return eachOf(ctx, in.Names, func(_ int, name string) error {
		key := types.NamespacedName{Namespace: in.Namespace, Name: name}
		attempt := 0
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj := &v1alpha1.BatchJob{}
			if err := getForUpdate(ctx, a.Client, key, obj, &attempt); err != nil {
				return client.IgnoreNotFound(err)
			}
			if obj.GetLabels()[v1alpha1.ActiveSchedulingLabel] != in.Scheduling {
				if attempt == 1 {
					return errCheckAgain // the cache's copy may lag: decide on etcd's
				}
				return nil
			}
			labels := obj.GetLabels()
			delete(labels, v1alpha1.ActiveSchedulingLabel)
			delete(labels, v1alpha1.GrantedTestBedLabel)
			obj.SetLabels(labels)
			annotations := obj.GetAnnotations()
			delete(annotations, v1alpha1.CreationRequestAnnotation)
			delete(annotations, v1alpha1.AssignedSlotsAnnotation)
			delete(annotations, v1alpha1.KillAnnotation)
			obj.SetAnnotations(annotations)
			return a.Client.Update(ctx, obj)
		})
		if err != nil {
			return fmt.Errorf("release %s from scheduling %s: %w", key, in.Scheduling, err)
		}
		return nil
	})
}

// RequestCreationInput asks a held job for an application in the given slots.
type RequestCreationInput struct {
	Namespace string
	Job       string
	Request   v1alpha1.CreationRequest
	// Nudge, when set, is sent (signal-with-start, on TaskQueue) once the request is written
	// and the granted slots' ghosts are gone, so the job's workflow makes its application
	// without waiting for the Scheduling's next task. Without it, the Scheduling nudges
	// after.
	Nudge     *SignalWithStart `json:",omitempty"`
	TaskQueue string           `json:",omitempty"`
}

// ErrNotHeld: the Scheduling no longer holds the job (it was released or taken over).
const ErrNotHeld = "NotHeld"

// ErrSlotsGone: a granted slot is no longer the test bed's. Its node left the bed after
// Admission read the slots and before the job's request was written: the slot is leaving
// (LeavingGrace), or the layout dropped it already. The grant cannot be used; nothing was
// written.
const ErrSlotsGone = "SlotsGone"

// RequestCreation writes the creation request on a job the Scheduling holds, then removes
// the ghosts of the granted slots, so that the job's pods find room in their slots and are
// placed without preempting anyone. The request comes first: it is the record by which the
// ghost reconciler knows the slots are granted, keeps them in the layout even if their node
// leaves, and makes them no new ghost (until the test bed's grantedSlotTimeout, if no pod of
// the job comes). Before it is written, the test bed must still have every slot (etcd's word
// on any slot the worker's copy shows gone): a slot it lost since the grant is
// ErrSlotsGone. Writing the same request again is a no-op, and the ghosts are looked for
// again.
//
// Once the request is written, the ghosts go first and the nudge after. A job's pods must
// not meet a ghost that is being deleted under them: the scheduler would start preempting a
// victim that slotplane deletes at the same moment, and kube-scheduler 1.36's asynchronous
// preemption can then leave the pod gated in its unschedulable pool until some later pod
// deletion, which in a quiet cluster never comes (the victim's deletion event arrives before
// the preemption records its last victim). A ghost cleared before the job's workflow is
// nudged is gone well before the application has any pod. The Scheduling's workflow task
// waits for this activity, and grants that reach it meanwhile wait for the task.
func (a *Activities) RequestCreation(ctx context.Context, in RequestCreationInput) error {
	if err := a.writeRequest(ctx, in); err != nil {
		return err
	}
	if err := a.ClearGhosts(ctx, TestBedRef{Namespace: in.Namespace, Name: in.Request.TestBed}, in.Request.Slots); err != nil {
		return err
	}
	if in.Nudge == nil {
		return nil
	}
	return a.NudgeWorkflows(ctx, SignalWithStartInput{TaskQueue: in.TaskQueue, Signals: []SignalWithStart{*in.Nudge}})
}

func (a *Activities) writeRequest(ctx context.Context, in RequestCreationInput) error {
	body, err := json.Marshal(in.Request)
	if err != nil {
		return fmt.Errorf("encode creation request: %w", err)
	}
	key := types.NamespacedName{Namespace: in.Namespace, Name: in.Job}
	attempt := 0
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// The first read from the worker's copy (which lacks the wrapped spec: the write is a
		// patch of the annotations), a retry's from etcd. The patch carries the
		// resourceVersion read, and a job the copy shows held by another is read again from
		// etcd before that decides.
		var job v1alpha1.BatchJob
		if err := a.copyForUpdate(ctx, key, &job, &attempt); err != nil {
			if apierrors.IsNotFound(err) {
				return nonRetryable(ErrNotHeld, "job %s is gone", key)
			}
			return err
		}
		if holder := job.Labels[v1alpha1.ActiveSchedulingLabel]; holder != in.Request.Scheduling {
			if attempt == 1 {
				return errCheckAgain
			}
			return nonRetryable(ErrNotHeld, "job %s is held by %q, not %s", key, holder, in.Request.Scheduling)
		}
		if job.Annotations[v1alpha1.CreationRequestAnnotation] == string(body) && job.Labels[v1alpha1.GrantedTestBedLabel] == in.Request.TestBed {
			return nil // written by an earlier attempt: its slots were checked then
		}
		// Checked on every attempt: the write must follow its check closely (LeavingGrace).
		if err := a.checkSlotsExist(ctx, in.Namespace, in.Request); err != nil {
			return err
		}
		base := job.DeepCopy()
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[v1alpha1.CreationRequestAnnotation] = string(body)
		delete(job.Annotations, v1alpha1.AssignedSlotsAnnotation) // it spoke of the last run
		if job.Labels == nil {
			job.Labels = map[string]string{}
		}
		job.Labels[v1alpha1.GrantedTestBedLabel] = in.Request.TestBed
		return a.Client.Patch(ctx, &job, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
}

// checkSlotsExist fails with ErrSlotsGone when the request's test bed lacks one of its slots,
// or has it only while it leaves (its node left the bed: LeavingGrace). A test bed that does
// not exist is left to the job's workflow, which fails the run saying so.
//
// The test bed is read from the worker's copy (readBed), a few milliseconds behind at most,
// far within LeavingGrace; slots it shows gone are looked for again in etcd before that
// fails the request.
func (a *Activities) checkSlotsExist(ctx context.Context, namespace string, req v1alpha1.CreationRequest) error {
	b, err := a.readBed(ctx, types.NamespacedName{Namespace: namespace, Name: req.TestBed}, req.Slots,
		func(b *bedSlots) bool { return len(goneSlots(b, req.Slots)) == 0 })
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get testbed %s: %w", req.TestBed, err)
	}
	if gone := goneSlots(b, req.Slots); len(gone) > 0 {
		return nonRetryable(ErrSlotsGone, "test bed %s no longer has slot %s: its node left the bed after the grant", req.TestBed, slots.FormatSlotIDs(gone))
	}
	return nil
}

// goneSlots are the positions the test bed has no slot at, or only one that leaves.
func goneSlots(b *bedSlots, positions []int32) []int32 {
	var gone []int32
	for _, p := range positions {
		if s, ok := b.slots[p]; !ok || s.LeavingSince != nil {
			gone = append(gone, p)
		}
	}
	return gone
}

// AssignSlotsInput changes the slots of a held job's running application: it keeps Keep and
// loses Revoke.
type AssignSlotsInput struct {
	Namespace  string
	Scheduling string
	Job        string
	TestBed    string
	Keep       []int32
	Revoke     []int32
	// Why is said in the Event on the job when slots are revoked.
	Why string
}

// AssignSlots records the slots a job's application holds now on the job
// (AssignedSlotsAnnotation, which the extender honours for the job's new pods), then deletes
// the job's pods in the revoked slots. The record comes first: Spark and Flink ask for a lost
// executor again at once, and the new pod must not take the slot back. Both steps can be
// repeated.
func (a *Activities) AssignSlots(ctx context.Context, in AssignSlotsInput) error {
	key := types.NamespacedName{Namespace: in.Namespace, Name: in.Job}
	want := slots.FormatSlotIDs(in.Keep)
	var job v1alpha1.BatchJob
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := a.Client.Get(ctx, key, &job); err != nil {
			if apierrors.IsNotFound(err) {
				return nonRetryable(ErrNotHeld, "job %s is gone", key)
			}
			return err
		}
		if holder := job.Labels[v1alpha1.ActiveSchedulingLabel]; holder != in.Scheduling {
			return nonRetryable(ErrNotHeld, "job %s is held by %q, not %s", key, holder, in.Scheduling)
		}
		if v, ok := job.Annotations[v1alpha1.AssignedSlotsAnnotation]; ok && v == want {
			return nil
		}
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[v1alpha1.AssignedSlotsAnnotation] = want
		return a.Client.Update(ctx, &job)
	})
	if err != nil || len(in.Revoke) == 0 {
		return err
	}
	var pods corev1.PodList
	if err := a.Client.List(ctx, &pods, client.InNamespace(in.Namespace),
		client.MatchingLabels{v1alpha1.BatchJobLabel: in.Job, v1alpha1.TestBedLabel: in.TestBed}); err != nil {
		return fmt.Errorf("list pods of job %s: %w", key, err)
	}
	var deleted []string
	for i := range pods.Items {
		p := &pods.Items[i]
		pos, proven := slots.ProvenSlot(p)
		if !proven || p.DeletionTimestamp != nil || p.Labels[v1alpha1.GhostLabel] == "true" || !slices.Contains(in.Revoke, pos) {
			continue
		}
		if err := a.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s/%s of job %s in revoked slot %d: %w", p.Namespace, p.Name, in.Job, pos, err)
		}
		deleted = append(deleted, p.Name)
	}
	if len(deleted) == 0 {
		return nil // a repeat: the pods went on an earlier attempt
	}
	// An Event on the job says what happened, as the scheduler says it of preempted pods.
	// A failed write fails the attempt, and the retry finds the pods gone and writes none:
	// events are best effort.
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: in.Job + ".", Namespace: in.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "BatchJob", Namespace: in.Namespace,
			Name: in.Job, UID: job.UID, ResourceVersion: job.ResourceVersion},
		Reason:  "Preempted",
		Message: fmt.Sprintf("slots %s taken back, pods %s deleted: %s", slots.FormatSlotIDs(in.Revoke), strings.Join(deleted, ", "), in.Why),
		Type:    corev1.EventTypeNormal, Source: corev1.EventSource{Component: "slotplane-admission"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := a.Client.Create(ctx, ev); err != nil {
		return fmt.Errorf("record the preemption of job %s: %w", key, err)
	}
	return nil
}
