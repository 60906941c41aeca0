package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/lifecycle"
	"slotplane/internal/slotslices"
)

func schedulingOf(s *v1alpha1.Scheduling) apitypes.Scheduling {
	return apitypes.Scheduling{Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion, TestBed: s.Spec.TestBed, Mode: s.Spec.Mode,
		Queue: s.Spec.Queue, Jobs: s.Spec.Jobs, TTLSecondsAfterFinished: s.Spec.TTLSecondsAfterFinished, Deleting: s.DeletionTimestamp != nil, Status: s.Status}
}

// queuePath matches a queue path by crds/v1alpha1's pattern, the one the CRDs' CEL rules use.
var queuePath = regexp.MustCompile(v1alpha1.QueuePathPattern)

// checkName: an object's name, required, a DNS subdomain as Kubernetes wants it.
func checkName(field, name string) *apitypes.FieldError {
	if name == "" {
		return &apitypes.FieldError{Field: field, Message: "is required"}
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return &apitypes.FieldError{Field: field, Message: fmt.Sprintf("%q is not a valid name: %s", name, strings.Join(msgs, "; "))}
	}
	return nil
}

// checkQueue: a queue path, optional, by the rule of the BatchJob and Scheduling schemas.
func checkQueue(name, queue string) *apitypes.FieldError {
	if errs := fieldErrors(v1alpha1.ValidateQueue(queue, field.NewPath(name))); len(errs) > 0 {
		return &errs[0]
	}
	return nil
}

// fieldErrors turns crds/v1alpha1's errors about a spec into the API's, on the request's
// paths: the object's spec.jobs[0] is the request's jobs[0].
func fieldErrors(errs field.ErrorList) []apitypes.FieldError {
	out := make([]apitypes.FieldError, 0, len(errs))
	for _, e := range errs {
		out = append(out, apitypes.FieldError{Field: strings.TrimPrefix(e.Field, "spec."), Message: e.ErrorBody()})
	}
	return out
}

// appendIf appends the errors found.
func appendIf(errs []apitypes.FieldError, found ...*apitypes.FieldError) []apitypes.FieldError {
	for _, e := range found {
		if e != nil {
			errs = append(errs, *e)
		}
	}
	return errs
}

// extendWait is how long an extension waits for its workflow's answer before it answers 202.
const extendWait = 20 * time.Second

// validateSchedulingRequest checks what can be checked without the cluster: the name, and
// the spec by the Scheduling's own rules (crds/v1alpha1), which the API server applies too.
func validateSchedulingRequest(r *apitypes.SchedulingRequest) []apitypes.FieldError {
	errs := appendIf(nil, checkName("name", r.Name))
	spec := v1alpha1.SchedulingSpec{TestBed: r.TestBed, Mode: r.Mode, Queue: r.Queue, Jobs: r.Jobs, TTLSecondsAfterFinished: r.TTLSecondsAfterFinished}
	specErrs := fieldErrors(v1alpha1.ValidateSchedulingSpec(&spec, field.NewPath("spec")))
	if !slices.ContainsFunc(specErrs, func(e apitypes.FieldError) bool { return e.Field == "testBed" }) {
		// The schema takes any test bed name it can store; the API reads the test bed, so
		// the name must also be one Kubernetes can look up.
		errs = appendIf(errs, checkName("testBed", r.TestBed))
	}
	return append(errs, specErrs...)
}

// validateAppend checks what can be checked without the cluster of jobs to append to sched:
// the list they make with its jobs must be one the schema accepts.
func validateAppend(sched *v1alpha1.Scheduling, jobs []v1alpha1.SchedulingJob) []apitypes.FieldError {
	if len(jobs) == 0 {
		// Appending nothing would change nothing: the request is a mistake.
		return []apitypes.FieldError{{Field: "append", Message: "at least one job is required"}}
	}
	return fieldErrors(v1alpha1.ValidateAppendedSchedulingJobs(sched.Spec.Mode, sched.Spec.Jobs, jobs, field.NewPath("append")))
}

// checkCluster checks the request against the cluster: the test bed, its slots and the jobs
// must exist, and the caller must be allowed to run each job (mayClaim). field names the
// request's list of jobs.
func (s *server) checkCluster(ctx context.Context, caller apitypes.User, ns, field string, r *apitypes.SchedulingRequest) ([]apitypes.FieldError, error) {
	var errs []apitypes.FieldError
	var tb v1alpha1.TestBed
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.TestBed}, &tb); err != nil {
		if e := fromKube("get test bed", err); e.Code == apitypes.CodeNotFound {
			errs = append(errs, apitypes.FieldError{Field: "testBed", Message: fmt.Sprintf("test bed %s does not exist in namespace %s", r.TestBed, ns)})
		} else {
			return nil, e
		}
	}
	positions := map[int32]bool{}
	if tb.Name != "" {
		bedSlots, err := slotslices.Read(ctx, s.Client, &tb)
		if err != nil {
			return nil, fromKube("list the slots of a test bed", err)
		}
		for _, sl := range bedSlots {
			positions[sl.Position] = true
		}
	}
	owner, err := s.jobOwners(ctx, ns, r.Jobs)
	if err != nil {
		return nil, err
	}
	for i, j := range r.Jobs {
		if owner[j.Name] == nil {
			errs = append(errs, apitypes.FieldError{Field: fmt.Sprintf("%s[%d].name", field, i), Message: fmt.Sprintf("batch job %s does not exist in namespace %s", j.Name, ns)})
		} else if e := s.mayClaim(ctx, caller, field, i, j.Name, *owner[j.Name]); e != nil {
			return nil, e
		}
		if tb.Name == "" {
			continue // the test bed's own error says it all
		}
		for k, id := range j.SlotIDs {
			if !positions[id] {
				errs = append(errs, apitypes.FieldError{Field: fmt.Sprintf("%s[%d].slotIDs[%d]", field, i, k), Message: fmt.Sprintf("test bed %s has no slot %d (it has %d)", r.TestBed, id, len(positions))})
			}
		}
	}
	return errs, nil
}

// jobOwners is the user of each job of the namespace, by name, for the jobs named and perhaps
// others; a job that does not exist has none. It reads the API's copy of the jobs, and the
// API server only for the named jobs the copy lacks (made a moment ago): a list of 10,000
// jobs from etcd for each new Scheduling, while the bed's other Schedulings claimed theirs,
// ran the answer past WriteTimeout. A copy that lags only makes this early error wrong: the
// worker's claim decides on etcd's word (activities.ClaimJobs).
func (s *server) jobOwners(ctx context.Context, ns string, named []v1alpha1.SchedulingJob) (map[string]*string, error) {
	var jobs v1alpha1.BatchJobList
	if err := s.reader().List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return nil, fromKube("list batch jobs", err)
	}
	owner := make(map[string]*string, len(jobs.Items))
	for i := range jobs.Items {
		owner[jobs.Items[i].Name] = &jobs.Items[i].Spec.User
	}
	var missing []string
	for _, j := range named {
		if owner[j.Name] == nil {
			missing = append(missing, j.Name)
		}
	}
	if len(missing) == 0 || s.Reader == nil {
		return owner, nil
	}
	if len(missing) > liveJobReads {
		// Many at once: one list from etcd costs less than a read of each.
		jobs = v1alpha1.BatchJobList{}
		if err := s.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			return nil, fromKube("list batch jobs", err)
		}
		for i := range jobs.Items {
			owner[jobs.Items[i].Name] = &jobs.Items[i].Spec.User
		}
		return owner, nil
	}
	for _, name := range missing {
		var j v1alpha1.BatchJob
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &j)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fromKube("get batch job "+name, err)
		}
		owner[name] = &j.Spec.User
	}
	return owner, nil
}

// liveJobReads is the most jobs a new Scheduling's check reads one by one from the API
// server when the API's copy lacks them; more are read in one list.
const liveJobReads = 50

// createScheduling makes the Scheduling object and starts its workflow at once (the bridge,
// seeing the object, finds that workflow running and starts nothing).
func (s *server) createScheduling(c *gin.Context) {
	var req apitypes.SchedulingRequest
	if err := decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	if errs := validateSchedulingRequest(&req); len(errs) > 0 {
		fail(c, invalid(errs...))
		return
	}
	ctx, ns := c.Request.Context(), namespaceOf(c)
	errs, err := s.checkCluster(ctx, userOf(c), ns, "jobs", &req)
	if err != nil {
		fail(c, err)
		return
	}
	if len(errs) > 0 {
		fail(c, invalid(errs...))
		return
	}
	runsAs, err := s.schedulingUser(ctx, userOf(c))
	if err != nil {
		fail(c, err)
		return
	}
	sched := &v1alpha1.Scheduling{
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: ns, Finalizers: []string{v1alpha1.SchedulingFinalizer}},
		Spec:       v1alpha1.SchedulingSpec{TestBed: req.TestBed, Mode: req.Mode, Queue: req.Queue, Jobs: req.Jobs, TTLSecondsAfterFinished: req.TTLSecondsAfterFinished},
	}
	sched.Spec.User, sched.Spec.Groups = runsAs.Name, runsAs.Groups
	if err := s.Client.Create(ctx, sched); err != nil {
		fail(c, fromKube(fmt.Sprintf("create scheduling %s/%s", ns, req.Name), err))
		return
	}
	if _, err := lifecycle.StartScheduling(ctx, s.Temporal, s.IDs, sched); err != nil {
		// Without its workflow the object would only wait for the bridge: take it back, so
		// the answer "nothing was created" holds.
		s.Log.Error("start a scheduling's workflow; removing the scheduling", "scheduling", ns+"/"+req.Name, "err", err)
		if controllerutil.RemoveFinalizer(sched, v1alpha1.SchedulingFinalizer) {
			_ = s.Client.Update(context.WithoutCancel(ctx), sched)
		}
		_ = s.Client.Delete(context.WithoutCancel(ctx), sched)
		fail(c, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "the scheduling's workflow could not be started, so nothing was created: " + err.Error(), Status: http.StatusServiceUnavailable})
		return
	}
	c.Header("Location", "/api/v1/schedulings/"+req.Name+"?namespace="+ns)
	c.JSON(http.StatusCreated, schedulingOf(sched))
}

func (s *server) listSchedulings(c *gin.Context) {
	pg, perr := pageOf(c)
	if perr != nil {
		fail(c, perr)
		return
	}
	var list v1alpha1.SchedulingList
	if err := s.reader().List(c.Request.Context(), &list, client.InNamespace(namespaceOf(c))); err != nil {
		fail(c, fromKube("list schedulings", err))
		return
	}
	items := list.Items
	slices.SortFunc(items, func(a, b v1alpha1.Scheduling) int { return strings.Compare(a.Name, b.Name) })
	items, next := cut(items, pg, func(x v1alpha1.Scheduling) string { return x.Name })
	out := make([]apitypes.Scheduling, 0, len(items))
	for i := range items {
		out = append(out, schedulingOf(&items[i]))
	}
	c.JSON(http.StatusOK, apitypes.SchedulingList{Items: out, ResourceVersion: list.ResourceVersion, Continue: next})
}

func (s *server) getScheduling(c *gin.Context) {
	sched, err := s.scheduling(c)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, schedulingOf(sched))
}

func (s *server) scheduling(c *gin.Context) (*v1alpha1.Scheduling, error) {
	var sched v1alpha1.Scheduling
	if err := s.get(c, "scheduling", &sched); err != nil {
		return nil, err
	}
	return &sched, nil
}

// deleteScheduling cancels a Scheduling: its workflow releases the jobs and deletes the
// applications it made, then lets the object go. 202: that happens after the answer.
// ?resourceVersion= deletes only the version the caller read.
func (s *server) deleteScheduling(c *gin.Context) {
	sched, err := s.scheduling(c)
	if err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var opts []client.DeleteOption
	if rv := c.Query("resourceVersion"); rv != "" {
		opts = append(opts, client.Preconditions{ResourceVersion: &rv})
	}
	if err := s.Client.Delete(ctx, sched, opts...); err != nil {
		fail(c, fromKube(fmt.Sprintf("delete scheduling %s/%s", sched.Namespace, sched.Name), err))
		return
	}
	// The deletion changed the object: cancel on the version it left (gone: no finalizer
	// held it, nothing to cancel). A failure is retried by the bridge, which sees the deletion.
	err = s.Client.Get(ctx, client.ObjectKeyFromObject(sched), sched)
	if err == nil {
		err = lifecycle.CancelScheduling(ctx, s.Client, s.Temporal, s.IDs, sched)
	} else if fromKube("", err).Code == apitypes.CodeNotFound {
		err = nil
	}
	if err != nil {
		s.Log.Warn("cancel a deleted scheduling's workflow", "scheduling", sched.Namespace+"/"+sched.Name, "err", err)
	}
	out := schedulingOf(sched)
	out.Deleting = true
	c.JSON(http.StatusAccepted, out)
}

// extendScheduling appends jobs to a Scheduling that is still taking them. The object is
// written first, as kubectl would, so that the object and the workflow never disagree for
// long; then the workflow's extend update is asked and its answer awaited. If the workflow
// refuses (a job another Scheduling holds, or the Scheduling stopped taking jobs meanwhile),
// the job list is put back as it was and the answer says why.
func (s *server) extendScheduling(c *gin.Context) {
	var req apitypes.SchedulingPatch
	if err := decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	sched, err := s.scheduling(c)
	if err != nil {
		fail(c, err)
		return
	}
	if err := extendable(sched, req.ResourceVersion); err != nil {
		fail(c, err)
		return
	}
	if err := s.checkExtension(c, sched, req.Append); err != nil {
		fail(c, err)
		return
	}
	before := sched.Spec.Jobs
	if sched, err = s.writeExtension(c.Request.Context(), sched, req); err != nil {
		fail(c, err)
		return
	}
	s.askExtension(c, sched, before)
}

// conflictf is a 409 with its message.
func conflictf(format string, args ...any) error {
	return &apitypes.Error{Code: apitypes.CodeConflict, Message: fmt.Sprintf(format, args...), Status: http.StatusConflict}
}

// extendable: the Scheduling takes more jobs now, at the version the caller read (if it
// named one).
func extendable(sched *v1alpha1.Scheduling, version string) error {
	switch st := sched.Status.State; {
	case version != "" && version != sched.ResourceVersion:
		return conflictf("scheduling %s is at resourceVersion %s, not %s: read it again", sched.Name, sched.ResourceVersion, version)
	case sched.DeletionTimestamp != nil:
		return conflictf("scheduling %s is being cancelled", sched.Name)
	case st != "" && st != v1alpha1.SchedulingAcquiring && st != v1alpha1.SchedulingScheduling:
		return conflictf("scheduling %s is %s and takes no more jobs", sched.Name, st)
	}
	return nil
}

// checkExtension checks the appended jobs by the object's rules, then against the cluster
// for the caller and for the Scheduling's own user, whom the worker checks each claim
// against.
func (s *server) checkExtension(c *gin.Context, sched *v1alpha1.Scheduling, jobs []v1alpha1.SchedulingJob) error {
	errs := validateAppend(sched, jobs)
	if len(errs) == 0 {
		var err error
		req := &apitypes.SchedulingRequest{TestBed: sched.Spec.TestBed, Jobs: jobs}
		errs, err = s.checkCluster(c.Request.Context(), userOf(c), sched.Namespace, "append", req)
		if err == nil && len(errs) == 0 && sched.Spec.User != "" && sched.Spec.User != userOf(c).Name {
			errs, err = s.checkCluster(c.Request.Context(), apitypes.User{Name: sched.Spec.User, Groups: sched.Spec.Groups}, sched.Namespace, "append", req)
		}
		if err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return invalid(errs...)
	}
	return nil
}

// writeExtension writes the longer job list, optimistically. Without a version named by the
// caller, a conflict with the workflow's status writes takes the latest object, as long as
// its job list and state are the ones checked.
func (s *server) writeExtension(ctx context.Context, sched *v1alpha1.Scheduling, req apitypes.SchedulingPatch) (*v1alpha1.Scheduling, error) {
	before := sched.Spec.Jobs
	sched.Spec.Jobs = append(slices.Clone(before), req.Append...)
	for attempt := 1; ; attempt++ {
		err := s.Client.Update(ctx, sched) // optimistic: only the version read
		if err == nil {
			return sched, nil
		}
		if !apierrors.IsConflict(err) || req.ResourceVersion != "" || attempt == 5 {
			return nil, fromKube(fmt.Sprintf("update scheduling %s/%s", sched.Namespace, sched.Name), err)
		}
		var latest v1alpha1.Scheduling
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(sched), &latest); err != nil {
			return nil, fromKube(fmt.Sprintf("get scheduling %s/%s", sched.Namespace, sched.Name), err)
		}
		if !equality.Semantic.DeepEqual(latest.Spec.Jobs, before) || extendable(&latest, "") != nil {
			return nil, conflictf("scheduling %s changed while it was being extended: read it again", sched.Name)
		}
		latest.Spec.Jobs = sched.Spec.Jobs
		sched = &latest
	}
}

// putBack writes the job list before back on a Scheduling whose extension to sched's list
// was refused. Status writes and the bridge's refusal note move the object meanwhile: on a
// conflict it reads the object again and puts the list back as long as it is still the one
// written.
func (s *server) putBack(ctx context.Context, sched *v1alpha1.Scheduling, before []v1alpha1.SchedulingJob) error {
	written := sched.Spec.Jobs
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.Scheduling
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(sched), &cur); err != nil {
			return err
		}
		if !equality.Semantic.DeepEqual(cur.Spec.Jobs, written) {
			return nil // someone changed it since: theirs stands
		}
		cur.Spec.Jobs = before
		return s.Client.Update(ctx, &cur)
	})
}

// askExtension asks the workflow to take the job list (lifecycle.ExtendScheduling, as the
// bridge does) and answers with its verdict. It waits
// at most extendWait: the object holds the jobs already, and a workflow slow to answer gets
// them from the bridge (202). A refusal puts the job list back as it was (before).
func (s *server) askExtension(c *gin.Context, sched *v1alpha1.Scheduling, before []v1alpha1.SchedulingJob) {
	ctx := c.Request.Context()
	waitCtx, cancelWait := context.WithTimeout(ctx, extendWait)
	defer cancelWait()
	_, err := lifecycle.ExtendScheduling(waitCtx, s.Temporal, s.IDs, sched.Namespace, sched.Name, "", sched.Spec.Jobs)
	var refused *lifecycle.RefusedError
	switch {
	case err == nil:
		c.JSON(http.StatusOK, schedulingOf(sched))
	case errors.As(err, &refused):
		// Refused: nothing was added. Put the list back, unless someone changed it since.
		if rerr := s.putBack(context.WithoutCancel(ctx), sched, before); rerr != nil {
			s.Log.Warn("put back a refused scheduling extension", "scheduling", sched.Namespace+"/"+sched.Name, "err", rerr)
		}
		fail(c, conflictf("scheduling %s refused the jobs, and its job list is as it was: %s", sched.Name, refused.Reason))
	default:
		// The object holds the jobs; the bridge passes them on when Temporal answers.
		s.Log.Warn("extend a scheduling's workflow; the bridge will retry", "scheduling", sched.Namespace+"/"+sched.Name, "err", err)
		c.JSON(http.StatusAccepted, schedulingOf(sched))
	}
}
