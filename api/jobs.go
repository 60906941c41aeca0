package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
	"slotplane/queue"
)

// jobOf shows a BatchJob. Its Scheduling is the one whose claim it carries now (the claim
// label): the status's scheduling is written after the claim is, and lags a release.
func jobOf(j *v1alpha1.BatchJob) apitypes.Job {
	var created *metav1.Time
	if !j.CreationTimestamp.IsZero() {
		created = &j.CreationTimestamp
	}
	return apitypes.Job{Name: j.Name, Namespace: j.Namespace, ResourceVersion: j.ResourceVersion, Labels: j.Labels, CreatedAt: created, Framework: j.Spec.Framework, Application: j.Spec.Application, DriverResources: j.Spec.DriverResources,
		Queue: j.Spec.Queue, Priority: j.Spec.Priority, User: j.Spec.User, Groups: j.Spec.Groups, SuspendedOutcome: j.Spec.SuspendedOutcome, Scheduling: j.Labels[v1alpha1.ActiveSchedulingLabel],
		SchedulerData: v1alpha1.SchedulerData(j.Annotations), Status: j.Status}
}

var jobStates = []v1alpha1.BatchJobState{v1alpha1.JobReady, v1alpha1.JobInQueue, v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobCompleted, v1alpha1.JobFailed}

// listJobs lists the namespace's BatchJobs, filtered by ?state=, ?queue= and ?scheduling=
// (each optional; all given must match). A job without a state is Ready.
func (s *server) listJobs(c *gin.Context) {
	state := v1alpha1.BatchJobState(c.Query("state"))
	if state != "" && !slices.Contains(jobStates, state) {
		names := make([]string, len(jobStates))
		for i, st := range jobStates {
			names[i] = string(st)
		}
		fail(c, invalid(apitypes.FieldError{Field: "state", Message: fmt.Sprintf("%q is not a job state (%s)", state, strings.Join(names, ", "))}))
		return
	}
	pg, perr := pageOf(c)
	if perr != nil {
		fail(c, perr)
		return
	}
	queue, sched := c.Query("queue"), c.Query("scheduling")
	var list v1alpha1.BatchJobList
	if err := s.reader().List(c.Request.Context(), &list, client.InNamespace(namespaceOf(c))); err != nil {
		fail(c, fromKube("list batch jobs", err))
		return
	}
	out := []apitypes.Job{}
	for i := range list.Items {
		j := jobOf(&list.Items[i])
		st := j.Status.State
		if st == "" {
			st = v1alpha1.JobReady
		}
		if (state != "" && st != state) || (sched != "" && j.Scheduling != sched) || (queue != "" && !sameQueue(j.Queue, queue)) {
			continue
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b apitypes.Job) int { return strings.Compare(a.Name, b.Name) })
	out, next := cut(out, pg, func(j apitypes.Job) string { return j.Name })
	c.JSON(http.StatusOK, apitypes.JobList{Items: out, ResourceVersion: list.ResourceVersion, Continue: next})
}

// sameQueue compares queue paths with "root." optional on either side.
func sameQueue(a, b string) bool { return queue.FullPath(a) == queue.FullPath(b) }

func (s *server) getJob(c *gin.Context) {
	var job v1alpha1.BatchJob
	if err := s.get(c, "batch job", &job); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, jobOf(&job))
}

// get reads the object named in the path, in the request's namespace, from the API
// server: one object costs it little, and a client then reads what it has just written
// (the informers' cache may be a moment behind). Lists come from the cache. what names the
// kind in the 404's message.
func (s *server) get(c *gin.Context, what string, obj client.Object) error {
	key := client.ObjectKey{Namespace: namespaceOf(c), Name: c.Param("name")}
	err := s.Client.Get(c.Request.Context(), key, obj)
	if err != nil {
		if e := fromKube("get "+what, err); e.Code != apitypes.CodeNotFound {
			return e
		}
		return notFound("%s %s does not exist in namespace %s", what, key.Name, key.Namespace)
	}
	return nil
}

// getTestBed answers a test bed with all its slots, read from its slot slices.
// listTestBeds lists the namespace's test beds by name, a page at a time, without their
// slots.
func (s *server) listTestBeds(c *gin.Context) {
	pg, perr := pageOf(c)
	if perr != nil {
		fail(c, perr)
		return
	}
	var list v1alpha1.TestBedList
	if err := s.reader().List(c.Request.Context(), &list, client.InNamespace(namespaceOf(c))); err != nil {
		fail(c, fromKube("list test beds", err))
		return
	}
	items := list.Items
	slices.SortFunc(items, func(a, b v1alpha1.TestBed) int { return strings.Compare(a.Name, b.Name) })
	items, next := cut(items, pg, func(x v1alpha1.TestBed) string { return x.Name })
	out := make([]apitypes.TestBed, 0, len(items))
	for i := range items {
		out = append(out, testBedOf(&items[i]))
	}
	c.JSON(http.StatusOK, apitypes.TestBedList{Items: out, ResourceVersion: list.ResourceVersion, Continue: next})
}

func (s *server) getTestBed(c *gin.Context) {
	var tb v1alpha1.TestBed
	if err := s.get(c, "test bed", &tb); err != nil {
		fail(c, err)
		return
	}
	bedSlots, err := slotslices.Read(c.Request.Context(), s.Client, &tb)
	if err != nil {
		fail(c, fromKube("list the slots of a test bed", err))
		return
	}
	out := testBedOf(&tb)
	out.Status.Slots = bedSlots
	c.JSON(http.StatusOK, out)
}

// testBedOf is a test bed without its slots.
func testBedOf(tb *v1alpha1.TestBed) apitypes.TestBed {
	return apitypes.TestBed{Name: tb.Name, Namespace: tb.Namespace, ResourceVersion: tb.ResourceVersion, Spec: tb.Spec, Status: apitypes.TestBedStatus{TestBedStatus: tb.Status}}
}

func slotSliceOf(s *v1alpha1.SlotSlice) apitypes.SlotSlice {
	return apitypes.SlotSlice{Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion, TestBed: s.TestBed, Index: s.Index, Slots: s.Slots}
}

func keyOf(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}

func validateJobRequest(r *apitypes.JobRequest) []apitypes.FieldError {
	var errs []apitypes.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, apitypes.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	errs = appendIf(errs, checkName("name", r.Name))
	if r.Framework != v1alpha1.FrameworkSpark && r.Framework != v1alpha1.FrameworkFlink {
		add("framework", "must be %s or %s, not %q", v1alpha1.FrameworkSpark, v1alpha1.FrameworkFlink, r.Framework)
	}
	errs = appendIf(errs, checkQueue("queue", r.Queue))
	if r.SuspendedOutcome != "" && !slices.Contains(v1alpha1.SuspendedOutcomes, r.SuspendedOutcome) {
		add("suspendedOutcome", "must be %s or %s, not %q", v1alpha1.RunCompleted, v1alpha1.RunFailed, r.SuspendedOutcome)
	}
	for _, m := range []struct {
		field string
		keys  map[string]string
	}{{"labels", r.Labels}, {"annotations", r.Annotations}} {
		for k := range m.keys {
			switch {
			case v1alpha1.IsSlotplanesOwn(k):
				add(m.field+"["+k+"]", "is slotplane's own and cannot be set")
			case strings.HasPrefix(k, v1alpha1.SchedulerDataPrefix):
				add(m.field+"["+k+"]", "is scheduler data: set it in schedulerData, without the prefix")
			}
		}
	}
	for _, e := range v1alpha1.ValidateSchedulerData(r.SchedulerData, field.NewPath("schedulerData")) {
		add(e.Field, "%s", e.ErrorBody())
	}
	slices.SortFunc(errs, func(a, b apitypes.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return errs
}

// createJob makes a BatchJob for the caller. The cluster's schema checks the rest of the
// spec; its complaints come back as field errors on the request's paths.
func (s *server) createJob(c *gin.Context) {
	var req apitypes.JobRequest
	if err := decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	if errs := validateJobRequest(&req); len(errs) > 0 {
		fail(c, invalid(errs...))
		return
	}
	// Only the framework's own wrapped spec: the other one is refused by the schema's rule.
	wrapped := v1alpha1.BatchJobSpec{Framework: req.Framework}
	switch req.Framework {
	case v1alpha1.FrameworkSpark:
		wrapped.SparkApplication = req.SparkApplication
	case v1alpha1.FrameworkFlink:
		wrapped.FlinkDeployment = req.FlinkDeployment
	}
	if err := s.checkWrappedSpec(c.Request.Context(), namespaceOf(c), &wrapped); err != nil {
		fail(c, err)
		return
	}
	runAs, err := s.runAs(c, req.User, req.Groups)
	if err != nil {
		fail(c, err)
		return
	}
	annotations := req.Annotations
	for name, v := range req.SchedulerData {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.SchedulerDataPrefix+name] = v
	}
	job := &v1alpha1.BatchJob{
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: namespaceOf(c), Labels: req.Labels, Annotations: annotations},
		Spec: v1alpha1.BatchJobSpec{Framework: req.Framework, Application: req.Application, DriverResources: req.DriverResources, Queue: req.Queue,
			Priority: req.Priority, User: runAs.Name, Groups: runAs.Groups, SparkApplication: req.SparkApplication, FlinkDeployment: req.FlinkDeployment,
			SuspendedOutcome: req.SuspendedOutcome},
	}
	if err := s.Client.Create(c.Request.Context(), job); err != nil {
		e := fromKube(fmt.Sprintf("create batch job %s/%s", job.Namespace, job.Name), err)
		for i := range e.Fields { // the schema speaks of spec.x; the request of x
			e.Fields[i].Field = strings.TrimPrefix(e.Fields[i].Field, "spec.")
		}
		fail(c, e)
		return
	}
	c.Header("Location", "/api/v1/jobs/"+job.Name+"?namespace="+job.Namespace)
	c.JSON(http.StatusCreated, jobOf(job))
}

// runAs is who a submitted job runs as: the caller, or the user and groups the request names
// if the caller may impersonate them (Kubernetes' verb "impersonate" on users and groups,
// which RBAC grants to trusted submitters such as an external scheduler).
func (s *server) runAs(c *gin.Context, name string, groups []string) (apitypes.User, error) {
	caller := userOf(c)
	if name == "" || name == caller.Name {
		if groups == nil {
			return apitypes.User{Name: caller.Name, Groups: caller.Groups}, nil
		}
		name = caller.Name
	}
	if len(name) > 253 || strings.ContainsAny(name, ",\n\t") {
		return apitypes.User{}, invalid(apitypes.FieldError{Field: "user", Message: fmt.Sprintf("%q is not a user name", name)})
	}
	checks := []Action{{Group: "", Verb: "impersonate", Resource: "users", Name: name}}
	for i, g := range groups {
		if g == "" || strings.ContainsAny(g, ",\n") {
			return apitypes.User{}, invalid(apitypes.FieldError{Field: fmt.Sprintf("groups[%d]", i), Message: fmt.Sprintf("%q is not a group name", g)})
		}
		checks = append(checks, Action{Group: "", Verb: "impersonate", Resource: "groups", Name: g})
	}
	for _, a := range checks {
		if a.Resource == "users" && a.Name == caller.Name {
			continue // oneself
		}
		if a.Resource == "groups" && slices.Contains(caller.Groups, a.Name) {
			continue // one's own group
		}
		ok, reason, err := s.Authorizer.Authorize(c.Request.Context(), caller, a)
		if err != nil {
			return apitypes.User{}, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "could not check the permission to " + a.String() + ": " + err.Error(), Status: http.StatusServiceUnavailable}
		}
		if !ok {
			field := "user"
			if a.Resource == "groups" {
				field = "groups"
			}
			msg := fmt.Sprintf("%s may not submit jobs as %s %s, which takes impersonate on %s", caller.Name, strings.TrimSuffix(a.Resource, "s"), a.Name, a.Resource)
			if reason != "" {
				msg += ": " + reason
			}
			return apitypes.User{}, &apitypes.Error{Code: apitypes.CodeForbidden, Message: msg, Fields: []apitypes.FieldError{{Field: field, Message: "not allowed for " + caller.Name}}, Status: http.StatusForbidden}
		}
	}
	return apitypes.User{Name: name, Groups: groups}, nil
}

// patchSchedulerData changes a job's scheduler data as a merge patch: values set, nulls
// remove, the rest stays. The whole data after the change must keep within its bounds; the
// write is conditional on the job read, so two schedulers' patches never pass each other's
// checks unseen (a conflict is retried here, on the job as it is then).
func (s *server) patchSchedulerData(c *gin.Context) {
	var patch apitypes.SchedulerDataPatch
	if err := decode(c, &patch); err != nil {
		fail(c, err)
		return
	}
	if len(patch) == 0 {
		fail(c, invalid(apitypes.FieldError{Field: "", Message: "the patch names no scheduler data"}))
		return
	}
	var job v1alpha1.BatchJob
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		job = v1alpha1.BatchJob{} // a retry reads afresh: a decode into a used object keeps old map entries
		if err := s.get(c, "batch job", &job); err != nil {
			return err
		}
		data := v1alpha1.SchedulerData(job.Annotations)
		if data == nil {
			data = map[string]string{}
		}
		for name, v := range patch {
			if v == nil {
				delete(data, name)
			} else {
				data[name] = *v
			}
		}
		// A name being removed is checked too: a malformed one can name no annotation.
		var errs []apitypes.FieldError
		for _, e := range v1alpha1.ValidateSchedulerData(data, field.NewPath("schedulerData")) {
			errs = append(errs, apitypes.FieldError{Field: e.Field, Message: e.ErrorBody()})
		}
		for name, v := range patch {
			if v == nil {
				for _, e := range v1alpha1.ValidateSchedulerData(map[string]string{name: ""}, field.NewPath("schedulerData")) {
					errs = append(errs, apitypes.FieldError{Field: e.Field, Message: e.ErrorBody()})
				}
			}
		}
		if len(errs) > 0 {
			slices.SortFunc(errs, func(a, b apitypes.FieldError) int { return strings.Compare(a.Field, b.Field) })
			return invalid(errs...)
		}
		for k := range job.Annotations {
			if strings.HasPrefix(k, v1alpha1.SchedulerDataPrefix) {
				delete(job.Annotations, k)
			}
		}
		if job.Annotations == nil && len(data) > 0 {
			job.Annotations = map[string]string{}
		}
		for name, v := range data {
			job.Annotations[v1alpha1.SchedulerDataPrefix+name] = v
		}
		return s.Client.Update(c.Request.Context(), &job)
	})
	if err != nil {
		var e *apitypes.Error
		if !errors.As(err, &e) {
			e = fromKube(fmt.Sprintf("update the scheduler data of batch job %s/%s", job.Namespace, job.Name), err)
		}
		fail(c, e)
		return
	}
	c.JSON(http.StatusOK, jobOf(&job))
}
