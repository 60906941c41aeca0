//go:build integration

package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/api"
	"slotplane/apitypes"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/localplatform/standin"
)

// sparkJob is a POST /jobs body that runs for runFor in the operators' stand-in.
func sparkJob(name, queue, runFor string) map[string]any {
	return map[string]any{
		"name": name, "framework": "spark", "queue": queue,
		"application":     map[string]any{"image": "registry.example/" + name + ":1", "mainClass": "org.example.Main", "mainApplicationFile": "local:///opt/app.jar"},
		"driverResources": map[string]any{"cpu": "250m", "memory": "512Mi"},
		"annotations":     map[string]any{standin.SimDurationAnnotation: runFor},
	}
}

func statusOf(s apitypes.Scheduling, job string) v1alpha1.SchedulingJobStatus {
	for _, j := range s.Status.Jobs {
		if j.Name == job {
			return j
		}
	}
	return v1alpha1.SchedulingJobStatus{}
}

// Jobs submitted through the API run as their submitter, whose groups the queue ACLs see;
// a running Scheduling takes more jobs (PATCH append), refuses bad ones with nothing
// changed, and puts its job list back when its workflow refuses.
func TestAPI_SubmitAndExtend(t *testing.T) {
	t.Parallel()
	p := platformtest.Start(t, platformtest.DefaultBed)
	ctx := context.Background()
	// Only the analysts group may submit to root.analytics.
	require.NoError(t, p.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"},
		Data: map[string]string{v1alpha1.QueuesConfigMapKey: `<allocations>
  <queue name="root">
    <aclSubmitApps> </aclSubmitApps>
    <aclAdministerApps> </aclAdministerApps>
    <queue name="analytics"><aclSubmitApps> analysts</aclSubmitApps></queue>
    <queue name="open"><aclSubmitApps>*</aclSubmitApps></queue>
  </queue>
</allocations>`},
	}))
	h, err := api.New(api.Options{Client: p.Client, Temporal: p.Temporal, Auth: api.StaticTokens{
		token: {Name: "alice", Groups: []string{"analysts"}}, "bob-token": {Name: "bob"}, "scheduler-token": {Name: "scheduler"},
	}, Authorizer: impersonators{"scheduler"}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := client{t: t, base: srv.URL + "/api/v1"}
	asBob := func(method, path string, body, out any) int { return c.do(method, path, "Bearer bob-token", body, out) }

	t.Run("submitting jobs", func(t *testing.T) { submittingJobs(t, p, client{t: t, base: c.base}, asBob) })

	// "held" belongs to another Scheduling, which runs a while.
	var s apitypes.Scheduling
	require.Equal(t, http.StatusCreated, c.call("POST", "/schedulings", map[string]any{"name": "other", "testBed": "bed", "mode": "QueueBased",
		"jobs": []map[string]any{{"name": "held", "replication": 1}}}, &s))
	require.Equal(t, http.StatusCreated, c.call("POST", "/schedulings", map[string]any{"name": "grow", "testBed": "bed", "mode": "QueueBased",
		"jobs": []map[string]any{{"name": "first", "replication": 2}}}, &s))
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, c.call("GET", "/schedulings/grow", nil, &s))
		return statusOf(s, "first").State == v1alpha1.JobRunning
	}, time.Minute, 250*time.Millisecond)

	t.Run("bad extensions change nothing", func(t *testing.T) { badExtensionsChangeNothing(t, p, client{t: t, base: c.base}, &s) })

	// Bob cannot run alice's job in a Scheduling of his own: nothing is created.
	var refused apitypes.Error
	require.Equal(t, http.StatusForbidden, asBob("POST", "/schedulings", map[string]any{"name": "bobs-run", "testBed": "bed", "mode": "QueueBased",
		"jobs": []map[string]any{{"name": "second", "replication": 1}}}, &refused))
	require.Contains(t, refused.Message, "bob may not run batch job second of user alice")
	require.True(t, apierrors.IsNotFound(p.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "bobs-run"}, &v1alpha1.Scheduling{})))

	// A good extension, at the version just read: alice's job runs. The trusted submitter
	// cannot add bob's job to alice's Scheduling, which runs as alice; in a Scheduling of its
	// own (which runs as no one in particular, since it may act for anyone) bob's job goes
	// to Admission, whose queue ACL refuses it: bob is not an analyst.
	require.Equal(t, http.StatusOK, c.call("GET", "/schedulings/grow", nil, &s))
	var grow v1alpha1.Scheduling
	require.NoError(t, p.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "grow"}, &grow))
	require.Equal(t, "alice", grow.Spec.User, "a Scheduling runs as its caller")
	var extended apitypes.Scheduling
	require.Equal(t, http.StatusOK, c.call("PATCH", "/schedulings/grow", map[string]any{"resourceVersion": s.ResourceVersion,
		"append": []map[string]any{{"name": "second", "replication": 1}}}, &extended))
	var why apitypes.Error
	require.Equal(t, http.StatusForbidden, c.do("PATCH", "/schedulings/grow", "Bearer scheduler-token", map[string]any{
		"append": []map[string]any{{"name": "bobs", "replication": 1}}}, &why), "%+v", why)
	require.Contains(t, why.Message, "alice may not run batch job bobs of user bob")
	var forBob apitypes.Scheduling
	require.Equal(t, http.StatusCreated, c.do("POST", "/schedulings", "Bearer scheduler-token", map[string]any{"name": "for-bob", "testBed": "bed", "mode": "QueueBased",
		"jobs": []map[string]any{{"name": "bobs", "replication": 1}}}, &forBob))
	var fb v1alpha1.Scheduling
	require.NoError(t, p.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "for-bob"}, &fb))
	require.Empty(t, fb.Spec.User, "a submitter for anyone makes Schedulings that run anyone's jobs")
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, c.call("GET", "/schedulings/grow", nil, &s))
		return s.Status.State == v1alpha1.SchedulingCompleted
	}, 2*time.Minute, 250*time.Millisecond)
	require.Len(t, s.Jobs, 2)
	require.Equal(t, v1alpha1.JobCompleted, statusOf(s, "first").State)
	require.Equal(t, v1alpha1.JobCompleted, statusOf(s, "second").State)
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, c.call("GET", "/schedulings/for-bob", nil, &forBob))
		return forBob.Status.State == v1alpha1.SchedulingCompleted
	}, 2*time.Minute, 250*time.Millisecond)
	require.Equal(t, v1alpha1.JobFailed, statusOf(forBob, "bobs").State)
	require.Equal(t, `not admitted: user "bob" may not submit to queue root.analytics (aclSubmitApps)`, statusOf(forBob, "bobs").Message)

	var e apitypes.Error
	require.Equal(t, http.StatusConflict, c.call("PATCH", "/schedulings/grow", map[string]any{"append": []map[string]any{{"name": "held", "replication": 1}}}, &e))
	require.Contains(t, e.Message, "is Completed and takes no more jobs")

	t.Run("scheduler data", func(t *testing.T) { schedulerData(t, p, client{t: t, base: c.base}) })
}

// submittingJobs has alice, bob and a trusted submitter submit jobs, which run as their
// submitters, and has alice's bad submissions refused with nothing made.
func submittingJobs(t *testing.T, p *platformtest.Platform, c client, asBob func(method, path string, body, out any) int) {
	ctx := context.Background()
	var job apitypes.Job
	require.Equal(t, http.StatusCreated, c.call("POST", "/jobs", sparkJob("first", "analytics", "20s"), &job))
	require.Equal(t, "alice", job.User)
	require.Equal(t, []string{"analysts"}, job.Groups, "the caller's groups, for the ACLs")
	require.Equal(t, "registry.example/first:1", job.Application.Image)
	second := sparkJob("second", "analytics", "1s")
	second["schedulerData"] = map[string]string{"estimate": "1s", "placement": "pack"}
	require.Equal(t, http.StatusCreated, c.call("POST", "/jobs", second, &job))
	require.Equal(t, map[string]string{"estimate": "1s", "placement": "pack"}, job.SchedulerData)
	var bobs apitypes.Job
	require.Equal(t, http.StatusCreated, asBob("POST", "/jobs", sparkJob("bobs", "analytics", "1s"), &bobs))
	require.Equal(t, "bob", bobs.User)
	require.Empty(t, bobs.Groups)
	require.Equal(t, http.StatusCreated, c.call("POST", "/jobs", sparkJob("held", "open", "60s"), &job))
	// A trusted submitter (an external scheduler) submits for a user of its choosing.
	forCarol := sparkJob("carols", "open", "1s")
	forCarol["user"], forCarol["groups"] = "carol", []string{"analysts"}
	var carols apitypes.Job
	require.Equal(t, http.StatusCreated, c.do("POST", "/jobs", "Bearer scheduler-token", forCarol, &carols))
	require.Equal(t, "carol", carols.User)
	require.Equal(t, []string{"analysts"}, carols.Groups)

	bad := func(edit func(m map[string]any)) map[string]any {
		m := sparkJob("bad", "", "1s")
		edit(m)
		return m
	}
	cases := map[string]struct {
		body   any
		status int
		field  string
		text   string
	}{
		"as someone else":      {body: bad(func(m map[string]any) { m["user"] = "carol" }), status: 403, field: "user", text: "alice may not submit jobs as user carol"},
		"in a foreign group":   {body: bad(func(m map[string]any) { m["groups"] = []string{"admins"} }), status: 403, field: "groups", text: "as group admins"},
		"a taken name":         {body: sparkJob("first", "", "1s"), status: 409},
		"bad framework":        {body: bad(func(m map[string]any) { m["framework"] = "hadoop" }), status: 422, field: "framework"},
		"bad name":             {body: bad(func(m map[string]any) { m["name"] = "Bad_Name" }), status: 422, field: "name"},
		"bad suspendedOutcome": {body: bad(func(m map[string]any) { m["suspendedOutcome"] = "Released" }), status: 422, field: "suspendedOutcome"},
		"the suspended outcome as an annotation": {body: bad(func(m map[string]any) {
			m["annotations"] = map[string]string{v1alpha1.SuspendedOutcomeAnnotation: "Failed"}
		}), status: 422, field: "annotations[" + v1alpha1.SuspendedOutcomeAnnotation + "]"},
		"a protocol label": {body: bad(func(m map[string]any) { m["labels"] = map[string]string{v1alpha1.ActiveSchedulingLabel: "x"} }), status: 422, field: "labels[" + v1alpha1.ActiveSchedulingLabel + "]"},
		"scheduler data as an annotation": {body: bad(func(m map[string]any) {
			m["annotations"] = map[string]string{v1alpha1.SchedulerDataPrefix + "estimate": "1s"}
		}), status: 422, field: "annotations[" + v1alpha1.SchedulerDataPrefix + "estimate]", text: "set it in schedulerData"},
		"a bad scheduler data name": {body: bad(func(m map[string]any) { m["schedulerData"] = map[string]string{"no spaces": "x"} }), status: 422, field: "schedulerData[no spaces]"},
		"no image (the schema's rule)": {body: bad(func(m map[string]any) {
			m["application"] = map[string]any{"image": "", "mainApplicationFile": "local:///a.jar"}
		}), status: 422, field: "application.image"},
		"flink spec on spark (a CEL rule)": {body: bad(func(m map[string]any) { m["flinkDeployment"] = map[string]any{"spec": map[string]any{}} }), status: 422, text: "flinkDeployment is only allowed when framework is flink"},
		"unknown field":                    {body: bad(func(m map[string]any) { m["replicas"] = 2 }), status: 400, text: `unknown field "replicas"`},
		"a service account in the wrapped spec": {body: bad(func(m map[string]any) {
			m["sparkApplication"] = map[string]any{"driver": map[string]any{"serviceAccount": "admin"}, "sparkConf": map[string]any{"spark.kubernetes.authenticate.driver.serviceAccountName": "admin"}}
		}), status: 422, field: "sparkApplication.driver.serviceAccount", text: "the request is invalid in 2 fields"},
		"a secret in a flink pod template": {body: bad(func(m map[string]any) {
			m["framework"] = "flink"
			m["flinkDeployment"] = map[string]any{"podTemplate": map[string]any{"spec": map[string]any{"volumes": []any{map[string]any{"name": "s", "secret": map[string]any{"secretName": "db"}}}}}}
		}), status: 422, field: "flinkDeployment.podTemplate.spec", text: "is not among the fields a wrapped spec may set"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var e apitypes.Error
			require.Equal(t, tc.status, c.call("POST", "/jobs", tc.body, &e), "%+v", e)
			if tc.field != "" {
				require.NotEmpty(t, e.Fields, e.Message)
				require.Equal(t, tc.field, e.Fields[0].Field, e.Message)
			}
			require.Contains(t, e.Message, tc.text)
		})
	}
	var list v1alpha1.BatchJobList
	require.NoError(t, p.Client.List(ctx, &list, ctrlclient.InNamespace("default")))
	require.Len(t, list.Items, 5, "no bad request made a job")
}

// badExtensionsChangeNothing has alice append bad jobs to the running Scheduling grow, read
// into s: each is refused, and grow's job list is as it was.
func badExtensionsChangeNothing(t *testing.T, p *platformtest.Platform, c client, s *apitypes.Scheduling) {
	ctx := context.Background()
	var e apitypes.Error
	require.Equal(t, http.StatusOK, c.call("GET", "/schedulings/grow", nil, s))
	cases := map[string]struct {
		body   any
		status int
		field  string
		text   string
	}{
		"nothing to append": {body: map[string]any{"append": []any{}}, status: 422, field: "append"},
		"a job it has":      {body: map[string]any{"append": []map[string]any{{"name": "first", "replication": 1}}}, status: 422, field: "append[0].name", text: "in the scheduling already"},
		"a missing job":     {body: map[string]any{"append": []map[string]any{{"name": "nope", "replication": 1}}}, status: 422, field: "append[0].name", text: "does not exist"},
		"slots in a QueueBased one": {body: map[string]any{"append": []map[string]any{{"name": "second", "replication": 1, "slotIDs": []int{0}}}},
			status: 422, field: "append[0].slotIDs"},
		"a stale version": {body: map[string]any{"resourceVersion": "1", "append": []map[string]any{{"name": "second", "replication": 1}}}, status: 409, text: "not 1"},
		"another user's job": {body: map[string]any{"append": []map[string]any{{"name": "second", "replication": 1}, {"name": "bobs", "replication": 1}}},
			status: 403, field: "append[1].name", text: "alice may not run batch job bobs of user bob"},
		"unknown field": {body: map[string]any{"jobs": []any{}}, status: 400},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.status, c.call("PATCH", "/schedulings/grow", tc.body, &e), "%+v", e)
			if tc.field != "" {
				require.NotEmpty(t, e.Fields, e.Message)
				require.Equal(t, tc.field, e.Fields[0].Field, e.Message)
			}
			require.Contains(t, e.Message, tc.text)
		})
	}
	require.Equal(t, http.StatusNotFound, c.call("PATCH", "/schedulings/nope", map[string]any{"append": []map[string]any{{"name": "second", "replication": 1}}}, &e))
	// The workflow refuses a job another Scheduling holds; the list is put back.
	require.Equal(t, http.StatusConflict, c.call("PATCH", "/schedulings/grow", map[string]any{"append": []map[string]any{{"name": "held", "replication": 1}}}, &e))
	require.Contains(t, e.Message, "refused the jobs")
	require.Contains(t, e.Message, "held")
	var sched v1alpha1.Scheduling
	require.NoError(t, p.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "grow"}, &sched))
	require.Equal(t, []v1alpha1.SchedulingJob{{Name: "first", Replication: 2}}, sched.Spec.Jobs)
}

// schedulerData reads the notes a scheduler wrote on job second before its run, merges a
// patch into them, and has bad patches refused with nothing changed.
func schedulerData(t *testing.T, p *platformtest.Platform, c client) {
	ctx := context.Background()
	// What the scheduler wrote before the run is there after it, untouched, and the run
	// is in the history; the application never carried the notes.
	var job apitypes.Job
	require.Equal(t, http.StatusOK, c.call("GET", "/jobs/second", nil, &job))
	require.Equal(t, map[string]string{"estimate": "1s", "placement": "pack"}, job.SchedulerData)
	require.Len(t, job.Status.History, 1)
	run := job.Status.History[0]
	require.Equal(t, v1alpha1.RunCompleted, run.Outcome)
	require.Equal(t, "grow", run.Scheduling)
	require.Len(t, run.Slots, 1)
	require.Len(t, run.Nodes, 1)
	for _, n := range run.SharedWith {
		require.Contains(t, []string{"first", "held"}, n, "only jobs that ran beside it")
	}
	var apps sparkv1beta2.SparkApplicationList
	require.NoError(t, p.Client.List(ctx, &apps, ctrlclient.InNamespace("default"), ctrlclient.MatchingLabels{v1alpha1.BatchJobLabel: "second"}))
	require.NotEmpty(t, apps.Items)
	for k := range apps.Items[0].Annotations {
		require.False(t, strings.HasPrefix(k, v1alpha1.SchedulerDataPrefix), "the application carries %s", k)
	}

	// A merge patch: set, change, remove; the rest stays.
	one, gone := "3s", (*string)(nil)
	var patched apitypes.Job // a fresh one: decoding into job would keep its old map entries
	require.Equal(t, http.StatusOK, c.call("PATCH", "/jobs/second/scheduler-data", map[string]*string{"estimate": &one, "placement": gone, "runs": &one}, &patched))
	require.Equal(t, map[string]string{"estimate": "3s", "runs": "3s"}, patched.SchedulerData)
	var stored v1alpha1.BatchJob
	require.NoError(t, p.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "second"}, &stored))
	require.Equal(t, "3s", stored.Annotations[v1alpha1.SchedulerDataPrefix+"estimate"], "kubectl sees an annotation")
	require.NotContains(t, stored.Annotations, v1alpha1.SchedulerDataPrefix+"placement")

	big := strings.Repeat("x", v1alpha1.MaxSchedulerDataBytes)
	many := map[string]string{}
	for i := range v1alpha1.MaxSchedulerDataKeys {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	cases := map[string]struct {
		path   string
		body   any
		status int
		field  string
	}{
		"a bad name":          {path: "/jobs/second/scheduler-data", body: map[string]any{"Not A Name": "x"}, status: 422, field: "schedulerData[Not A Name]"},
		"a name with a slash": {path: "/jobs/second/scheduler-data", body: map[string]any{"slotplane.io/slot-id": "3"}, status: 422, field: "schedulerData[slotplane.io/slot-id]"},
		"removing a bad name": {path: "/jobs/second/scheduler-data", body: map[string]any{"-x-": nil}, status: 422, field: "schedulerData[-x-]"},
		"too large":           {path: "/jobs/second/scheduler-data", body: map[string]any{"big": big}, status: 422, field: "schedulerData"},
		"too many":            {path: "/jobs/second/scheduler-data", body: many, status: 422, field: "schedulerData"},
		"nothing":             {path: "/jobs/second/scheduler-data", body: map[string]any{}, status: 422},
		"not an object":       {path: "/jobs/second/scheduler-data", body: `["estimate"]`, status: 400},
		"not a string":        {path: "/jobs/second/scheduler-data", body: map[string]any{"estimate": 3}, status: 400},
		"a missing job":       {path: "/jobs/nope/scheduler-data", body: map[string]any{"estimate": "1s"}, status: 404},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var e apitypes.Error
			require.Equal(t, tc.status, c.call("PATCH", tc.path, tc.body, &e), "%+v", e)
			if tc.field != "" {
				require.NotEmpty(t, e.Fields, e.Message)
				require.Equal(t, tc.field, e.Fields[0].Field, e.Message)
			}
		})
	}
	var after apitypes.Job
	require.Equal(t, http.StatusOK, c.call("GET", "/jobs/second", nil, &after))
	require.Equal(t, map[string]string{"estimate": "3s", "runs": "3s"}, after.SchedulerData, "no refused patch changed anything")
}

// impersonators allows everything, except impersonation to all but the trusted users.
type impersonators []string

func (z impersonators) Authorize(_ context.Context, u apitypes.User, a api.Action) (bool, string, error) {
	if a.Verb == "impersonate" {
		return slices.Contains(z, u.Name), "", nil
	}
	return true, "", nil
}
