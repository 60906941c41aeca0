//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apiclient"
	"slotplane/apitypes"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/standin"
)

// The attacks that need the whole platform, one subtest each: a hostile user with a plain
// token, through the REST API, and through kubectl. Each gets a clear refusal,
// nothing is created or changed, and the API process's memory stays bounded. The attacks
// on one server alone are the servers' own tests (TestAttack_* in extender/ and api/), and
// claiming another user's job is bridge's TestIdentity_ASchedulingRunsOthersJobsOnlyWithTheRight.
func TestAttack_HostileUserOnThePlatform(t *testing.T) {
	t.Parallel() // no timing it asserts on: it may share the machine with another such test
	p := startE2E(t, `<allocations><queue name="batch"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`)
	ctx := context.Background()
	h := &hostileUser{p: p, ctx: ctx,
		app:    v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
		driver: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	rssBefore := p.parts["api"].rssKiB(t)

	t.Run("a plain token submits as another user", h.submitsAsAnotherUser)
	t.Run("privileged fields in a wrapped spec", h.sendsPrivilegedFields)
	t.Run("an oversized Scheduling", h.sendsAnOversizedScheduling)
	t.Run("forged slot claims", h.forgesSlotClaims)
	t.Run("a tenant with kubectl", h.editsAsATenantWithKubectl)

	// The refusals above cost the API nothing that stays: a few hundred more oversized
	// requests (each about 60 KB of JSON) leave its resident memory within a bound.
	jobs := make([]v1alpha1.SchedulingJob, v1alpha1.MaxSchedulingJobs+1)
	for i := range jobs {
		jobs[i] = v1alpha1.SchedulingJob{Name: fmt.Sprintf("j-%04d", i), Replication: 1}
	}
	for i := range 300 {
		_, err := p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: fmt.Sprintf("huge-%d", i), TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: jobs})
		require.Equal(t, 422, statusOf(err), "%v", err)
	}
	rssAfter := p.parts["api"].rssKiB(t)
	t.Logf("the API's resident memory: %d KiB before the attacks, %d KiB after", rssBefore, rssAfter)
	require.Less(t, rssAfter-rssBefore, int64(64<<10), "the API grew by more than 64 MiB under refused requests")
}

// hostileUser is the platform TestAttack_HostileUserOnThePlatform attacks, and the
// application and driver of the jobs it submits.
type hostileUser struct {
	p      *e2ePlatform
	ctx    context.Context
	app    v1alpha1.Application
	driver corev1.ResourceList
}

// statusOf is the HTTP status of the API's answer that err reports, or 0.
func statusOf(err error) int {
	var se *apiclient.StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

// jobExists says whether the BatchJob name exists.
func (h *hostileUser) jobExists(t *testing.T, name string) bool {
	err := h.p.kube.Get(h.ctx, client.ObjectKey{Namespace: "default", Name: name}, &v1alpha1.BatchJob{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
	return err == nil
}

// submitsAsAnotherUser submits jobs through the API, with the plain token, as another user
// and in a group not the token's: both are refused, and no job is made.
func (h *hostileUser) submitsAsAnotherUser(t *testing.T) {
	p, ctx := h.p, h.ctx
	_, err := p.api.CreateJob(ctx, apitypes.JobRequest{Name: "as-bob", Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
		Application: h.app, DriverResources: h.driver, User: "bob"})
	require.Equal(t, 403, statusOf(err), "%v", err)
	require.ErrorContains(t, err, "bob")
	_, err = p.api.CreateJob(ctx, apitypes.JobRequest{Name: "as-admins", Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
		Application: h.app, DriverResources: h.driver, Groups: []string{"admins"}})
	require.Equal(t, 403, statusOf(err), "%v", err)
	require.False(t, h.jobExists(t, "as-bob"))
	require.False(t, h.jobExists(t, "as-admins"))
}

// sendsPrivilegedFields submits a job whose wrapped spec sets privileged fields, through
// the API and through kubectl: both refuse it, the API naming each field, and no job is
// made.
func (h *hostileUser) sendsPrivilegedFields(t *testing.T) {
	p, ctx := h.p, h.ctx
	spec := `{"driver":{"serviceAccount":"cluster-admin","hostNetwork":true,"secrets":[{"name":"db","path":"/s","secretType":"Generic"}]},` +
		`"sparkConf":{"spark.kubernetes.authenticate.driver.serviceAccountName":"cluster-admin"}}`
	_, err := p.api.CreateJob(ctx, apitypes.JobRequest{Name: "privileged", Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
		Application: h.app, DriverResources: h.driver, SparkApplication: &runtime.RawExtension{Raw: []byte(spec)}})
	require.Equal(t, 422, statusOf(err), "%v", err)
	var se *apiclient.StatusError
	require.ErrorAs(t, err, &se)
	var fields []string
	for _, f := range se.API.Fields {
		fields = append(fields, f.Field)
	}
	joined := strings.Join(fields, " ")
	for _, field := range []string{"driver.serviceAccount", "driver.hostNetwork", "driver.secrets", "spark.kubernetes.authenticate"} {
		require.Contains(t, joined, field, "each refused field is named")
	}
	require.False(t, h.jobExists(t, "privileged"))
	// kubectl's door: the bridge's admission webhook refuses the same spec.
	err = p.kube.Create(ctx, &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: "default"},
		Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, User: "alice", Application: h.app, DriverResources: h.driver,
			SparkApplication: &runtime.RawExtension{Raw: []byte(spec)}}})
	require.True(t, apierrors.IsInvalid(err), "the webhook refuses it: %v", err)
	require.ErrorContains(t, err, "spec.sparkApplication.driver.hostNetwork")
	require.False(t, h.jobExists(t, "privileged"))
}

// sendsAnOversizedScheduling submits a Scheduling of more jobs than the limit, through the
// API and through kubectl: both refuse it, and none is made.
func (h *hostileUser) sendsAnOversizedScheduling(t *testing.T) {
	p, ctx := h.p, h.ctx
	jobs := make([]v1alpha1.SchedulingJob, v1alpha1.MaxSchedulingJobs+1)
	for i := range jobs {
		jobs[i] = v1alpha1.SchedulingJob{Name: fmt.Sprintf("j-%04d", i), Replication: 1}
	}
	_, err := p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "huge", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch", Jobs: jobs})
	require.Equal(t, 422, statusOf(err), "%v", err)
	require.ErrorContains(t, err, strconv.Itoa(v1alpha1.MaxSchedulingJobs))
	// kubectl meets the same limit in the CRD's schema.
	err = p.kube.Create(ctx, &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: "default"},
		Spec: v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, User: "alice", Jobs: jobs}})
	require.True(t, apierrors.IsInvalid(err), "the schema refuses %d jobs: %v", len(jobs), err)
	err = p.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "huge"}, &v1alpha1.Scheduling{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

// forgesSlotClaims claims slot 0 with a pod made on its node and with executors that carry
// slotplane's keys: the slot keeps its ghost, the keys are stripped, and the job runs on
// every slot through Admission's grant.
func (h *hostileUser) forgesSlotClaims(t *testing.T) {
	p, ctx := h.p, h.ctx
	tb, err := p.api.GetTestBed(ctx, "bed")
	require.NoError(t, err)
	slot0 := tb.Status.Slots[0]
	// A pod made straight on slot 0's node, with a claim on the slot that is not its
	// own: nothing adopts it, and the slot keeps its ghost.
	squatter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "squatter", Namespace: "default",
			Labels:      map[string]string{v1alpha1.TestBedLabel: "bed"},
			Annotations: map[string]string{v1alpha1.SlotClaimAnnotation: "0/00000000-0000-0000-0000-000000000000"}},
		Spec: corev1.PodSpec{NodeName: slot0.NodeName, Containers: []corev1.Container{{Name: "c", Image: "registry.example/x:1"}},
			Tolerations: []corev1.Toleration{{Key: v1alpha1.TestBedTaint, Operator: corev1.TolerationOpExists}}},
	}
	require.NoError(t, p.kube.Create(ctx, squatter))
	// A job whose executors carry slotplane keys of their own: they are stripped.
	forged := `{"executor":{"labels":{"slotplane.io/slot-id":"0","team":"a"},"annotations":{"slotplane.io/slot-claim":"0/x"}}}`
	_, err = p.api.CreateJob(ctx, apitypes.JobRequest{Name: "forger", Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
		Application: h.app, DriverResources: h.driver, SparkApplication: &runtime.RawExtension{Raw: []byte(forged)},
		Annotations: map[string]string{standin.SimDurationAnnotation: "2s"}})
	require.NoError(t, err)
	// For two ghost passes and more, slot 0 stays free and every slot with it.
	require.Never(t, func() bool {
		tb, err := p.api.GetTestBed(ctx, "bed")
		return err != nil || tb.Status.Slots[0].State != v1alpha1.SlotFree || tb.Status.Free != p.slots
	}, 3*time.Second, 100*time.Millisecond, "a forged claim took slot 0")

	// The job still runs on every slot, slot 0 included, through Admission's grant.
	_, err = p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "forgery", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch",
		Jobs: []v1alpha1.SchedulingJob{{Name: "forger", Replication: p.slots}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s, err := p.api.GetScheduling(ctx, "forgery")
		return err == nil && s.Status.State == v1alpha1.SchedulingCompleted
	}, 3*time.Minute, 250*time.Millisecond, "the forger's Scheduling did not complete")
	var apps sparkv1beta2.SparkApplicationList
	require.NoError(t, p.kube.List(ctx, &apps, client.InNamespace("default"), client.MatchingLabels{v1alpha1.BatchJobLabel: "forger"}))
	require.Len(t, apps.Items, 1)
	exec := apps.Items[0].Spec.Executor
	require.NotContains(t, exec.Labels, v1alpha1.GroupName+"/slot-id", "a slotplane label reached the application")
	require.NotContains(t, exec.Annotations, v1alpha1.SlotClaimAnnotation, "a slot claim reached the application")
	if exec.Template != nil {
		require.NotContains(t, exec.Template.Labels, v1alpha1.GroupName+"/slot-id")
		require.NotContains(t, exec.Template.Annotations, v1alpha1.SlotClaimAnnotation)
	}
	require.Equal(t, "a", exec.Labels["team"], "the job's own labels pass")
	j, err := p.api.GetJob(ctx, "forger")
	require.NoError(t, err)
	require.Len(t, j.Status.Slots, int(p.slots))
	require.Contains(t, j.Status.Slots, int32(0), "slot 0 went to the job Admission granted it to")
	require.NoError(t, p.kube.Delete(ctx, squatter, client.GracePeriodSeconds(0)))
	p.waitSlotsFree(t, time.Minute)
}

// editsAsATenantWithKubectl has mallory, a tenant with kubectl, edit alice's running job,
// make a job with slotplane's keys, and make pods that ask for every slot: each is refused
// or placed nowhere, and alice's job runs on untouched.
func (h *hostileUser) editsAsATenantWithKubectl(t *testing.T) {
	p, ctx := h.p, h.ctx
	mallory := h.tenant(t)

	// alice's job runs meanwhile.
	_, err := p.api.CreateJob(ctx, apitypes.JobRequest{Name: "alices", Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
		Application: h.app, DriverResources: h.driver, Annotations: map[string]string{standin.SimDurationAnnotation: "20s"}})
	require.NoError(t, err)
	_, err = p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "alices", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch",
		Jobs: []v1alpha1.SchedulingJob{{Name: "alices", Replication: 2}}})
	require.NoError(t, err)
	p.waitJob(t, "alices", v1alpha1.JobRunning, 2*time.Minute)

	// A forged kill in an administrator's name, and a rewritten image: both refused by the
	// API server once the policies are in force (a moment after the platform starts).
	edit := func(f func(*v1alpha1.BatchJob), opts ...client.UpdateOption) error {
		var job v1alpha1.BatchJob
		require.NoError(t, mallory.Get(ctx, client.ObjectKey{Namespace: "default", Name: "alices"}, &job))
		f(&job)
		return mallory.Update(ctx, &job, opts...)
	}
	kill := `{"scheduling":"alices","by":"root-admin","as":"an administrator of root","at":"2026-12-05T00:00:00Z"}`
	forgeKill := func(j *v1alpha1.BatchJob) { j.Annotations[v1alpha1.KillAnnotation] = kill }
	require.Eventually(t, func() bool { return apierrors.IsForbidden(edit(forgeKill, client.DryRunAll)) },
		30*time.Second, 200*time.Millisecond, "a forged kill is not refused")
	err = edit(forgeKill)
	require.True(t, apierrors.IsForbidden(err), "a forged kill: %v", err)
	err = edit(func(j *v1alpha1.BatchJob) { j.Spec.Application.Image = "evil/miner:1" })
	require.True(t, apierrors.IsForbidden(err), "a rewritten image: %v", err)

	// A job of mallory's own made with a claim and a grant of its own: refused.
	forged := &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "mallorys", Namespace: "default",
		Labels:      map[string]string{v1alpha1.ActiveSchedulingLabel: "alices", v1alpha1.GrantedTestBedLabel: "bed"},
		Annotations: map[string]string{v1alpha1.CreationRequestAnnotation: `{"scheduling":"alices","testBed":"bed","slots":[0,1,2,3,4,5,6,7],"run":1,"grantedAt":"2026-12-05T00:00:00.000000Z"}`}},
		Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, User: "mallory", Application: h.app, DriverResources: h.driver}}
	require.True(t, apierrors.IsForbidden(mallory.Create(ctx, forged)))
	forged.Labels, forged.Annotations = nil, nil
	require.NoError(t, mallory.Create(ctx, forged), "the same job without slotplane's keys")

	h.squatEverySlot(t, mallory)
	total, free := p.bedSlots(ctx)
	require.Equal(t, total-2, free, "only alice's two slots are taken")
	j, err := p.api.GetJob(ctx, "alices")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.JobRunning, j.Status.State, "alice's job was touched: %s", j.Status.Message)
	require.Equal(t, "registry.example/job:1", j.Application.Image)
	p.waitScheduling(t, "alices", v1alpha1.SchedulingCompleted, 2*time.Minute)
	j, err = p.api.GetJob(ctx, "alices")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.JobCompleted, j.Status.State)
	p.waitSlotsFree(t, time.Minute)
}

// tenant binds mallory to the Role of a tenant and is a client that acts as mallory.
func (h *hostileUser) tenant(t *testing.T) client.Client {
	p, ctx := h.p, h.ctx
	// mallory holds the Role docs/operations.md gives external schedulers, and may create pods, as
	// every driver's service account may.
	cs := p.cluster.Client()
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"schedulings"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
			{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"batchjobs"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
			{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"testbeds"}, Verbs: []string{"get", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mallory-is-a-tenant"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(p.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"analysts"}}
	mallory, err := client.New(cfg, client.Options{Scheme: p.kube.Scheme()})
	require.NoError(t, err)
	return mallory
}

// squatEverySlot has mallory make pods that ask the slot-scheduler for every slot of the
// bed, checks that none is placed, and deletes them.
func (h *hostileUser) squatEverySlot(t *testing.T, mallory client.Client) {
	p, ctx := h.p, h.ctx
	// Pods that ask the slot-scheduler for every slot of the bed, as a driver could:
	// one of no job, one of mallory's job (no grant), one of alice's running job (its
	// granted slots are taken by its own executors). None is placed, and no ghost goes.
	all := make([]string, p.slots)
	for i := range all {
		all[i] = strconv.Itoa(i)
	}
	slotReq := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
		corev1.ResourceName(v1alpha1.SlotResource): resource.MustParse("1")}
	squatters := map[string]string{"squat-none": "", "squat-own": "mallorys", "squat-alices": "alices"}
	for name, job := range squatters {
		labels := map[string]string{v1alpha1.TestBedLabel: "bed"}
		if job != "" {
			labels[v1alpha1.BatchJobLabel] = job
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels,
			Annotations: map[string]string{v1alpha1.SlotIDsAnnotation: strings.Join(all, ",")}},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.SlotSchedulerName, PriorityClassName: v1alpha1.BatchPriorityClass,
				Tolerations: []corev1.Toleration{{Key: v1alpha1.TestBedTaint, Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "c", Image: "registry.example/x:1", Resources: corev1.ResourceRequirements{Requests: slotReq, Limits: slotReq}}}}}
		require.NoError(t, mallory.Create(ctx, pod))
	}
	// Through several scheduling attempts of each, none is placed.
	require.Never(t, func() bool {
		for name := range squatters {
			var pod corev1.Pod
			if err := p.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &pod); err != nil || pod.Spec.NodeName != "" {
				t.Logf("pod %s: placed on %q (%v)", name, pod.Spec.NodeName, err)
				return true
			}
		}
		return false
	}, 5*time.Second, 250*time.Millisecond, "a squatter was placed")
	for name := range squatters {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		require.NoError(t, p.kube.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	}
}

// rssKiB is the component process's resident memory (VmRSS), in KiB.
func (c *component) rssKiB(t *testing.T) int64 {
	t.Helper()
	c.mu.Lock()
	pid := c.cmd.Process.Pid
	c.mu.Unlock()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
