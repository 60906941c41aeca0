//go:build integration

package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
	"slotplane/slots"
)

// A BatchJob or a Scheduling made with kubectl names only its maker as its user, and only
// the maker's groups, unless the maker may submit for others (the admission policies
// slotplane-batchjob-identity and slotplane-scheduling-identity). Who may create BatchJobs therefore cannot walk around the
// queue ACLs, and a claim label written later is no change of identity.
func TestAdmissionPolicy_BatchJobUserIsItsMaker(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := c.Client()
	// mallory and the external scheduler may write BatchJobs; only the scheduler may submit
	// for others, through slotplane's own verb.
	grant(ctx, t, cs, "batchjob-writer", []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"batchjobs", "schedulings"}, Verbs: []string{"create", "update", "get"}}},
		"mallory", "scheduler")
	grant(ctx, t, cs, "submit-for-anyone", submitForAnyone, "scheduler")
	mallory, scheduler := impersonated(t, c, "mallory", "analysts"), impersonated(t, c, "scheduler")
	job := func(name, user string, groups ...string) *v1alpha1.BatchJob {
		return &v1alpha1.BatchJob{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, User: user, Groups: groups,
				Application: v1alpha1.Application{Image: "registry.example/a:1", MainApplicationFile: "local:///a.jar"}},
		}
	}

	// The policy is in force a moment after it is type-checked. The probe is a dry run: one
	// made before that moment must not leave a job behind.
	require.Eventually(t, func() bool {
		err := mallory.Create(ctx, job("as-alice", "alice"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "may not create a job for user alice")
	}, 30*time.Second, 200*time.Millisecond, "a job for another user is refused")
	err := mallory.Create(ctx, job("as-alice", "alice"))
	require.ErrorContains(t, err, "spec.user: mallory may not create a job for user alice")
	err = mallory.Create(ctx, job("as-admin", "mallory", "analysts", "admins"))
	require.ErrorContains(t, err, "spec.groups: mallory may name only its own groups")
	require.ErrorContains(t, err, "admins are not")

	own := job("own", "mallory", "analysts")
	require.NoError(t, mallory.Create(ctx, own), "one's own user and groups")
	require.NoError(t, mallory.Create(ctx, job("nobody", "")), "no user at all (it runs as nobody for the ACLs)")
	require.NoError(t, scheduler.Create(ctx, job("for-alice", "alice", "admins")), "a submitter with submit-as")

	// A Scheduling runs as its user: the same rule, and no user only for those who may
	// submit for anyone. That policy is another object, in force on its own moment: probed
	// the same way.
	require.Eventually(t, func() bool {
		err := mallory.Create(ctx, testobjects.Scheduling("no-user").Job("own", 1).Obj(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "spec.user: set it to mallory")
	}, 30*time.Second, 200*time.Millisecond, "a scheduling without a user is refused")
	require.ErrorContains(t, mallory.Create(ctx, testobjects.Scheduling("no-user").Job("own", 1).Obj()), "spec.user: set it to mallory")
	asAlice := testobjects.Scheduling("as-alice").User("alice").Job("own", 1).Obj()
	require.ErrorContains(t, mallory.Create(ctx, asAlice), "mallory may not run a scheduling as user alice")
	asAdmins := testobjects.Scheduling("as-admins").User("mallory").Groups("admins").Job("own", 1).Obj()
	require.ErrorContains(t, mallory.Create(ctx, asAdmins), "spec.groups")
	require.NoError(t, mallory.Create(ctx, testobjects.Scheduling("mine").User("mallory").Groups("analysts").Job("own", 1).Obj()))
	require.NoError(t, scheduler.Create(ctx, testobjects.Scheduling("anyones").Job("own", 1).Obj()), "a submitter for anyone may leave the user out")

	// A later change of identity is checked like a creation; other changes pass.
	require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(own), own))
	own.Labels = map[string]string{"team": "a"}
	require.NoError(t, mallory.Update(ctx, own))
	own.Spec.User = "alice"
	require.ErrorContains(t, mallory.Update(ctx, own), "may not create a job for user alice")
}

// The extender's service account may delete pods (to clear a slot's ghost on the filter
// path), but the admission policy slotplane-extender-deletes-ghosts holds it to ghosts: an
// executor, or any other pod, is refused, while anyone else's deletes are not its concern.
func TestAdmissionPolicy_TheExtenderDeletesOnlyGhosts(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := c.Client()
	const extenderSA = "system:serviceaccount:slotplane-system:slotplane-extender"
	grant(ctx, t, cs, "pod-deleter", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "delete"}}},
		extenderSA, "operator")
	as := func(user string) client.Client { return impersonated(t, c, user) }
	admin, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	pod := func(name string, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/a:1"}}}}
		require.NoError(t, admin.Create(ctx, p))
		return p
	}
	extender, operator := as(extenderSA), as("operator")

	executor := pod("executor", map[string]string{v1alpha1.TestBedLabel: "bed"})
	forged := pod("forged", map[string]string{v1alpha1.GhostLabel: "yes"})
	require.Eventually(t, func() bool { // a dry run: the policy is in force a moment after it is type-checked
		return extender.Delete(ctx, executor, client.DryRunAll) != nil
	}, 30*time.Second, 200*time.Millisecond, "the extender deleting an executor is refused")
	require.ErrorContains(t, extender.Delete(ctx, executor), "the extender deletes ghost pods only; executor is not one")
	require.ErrorContains(t, extender.Delete(ctx, forged), "is not one")
	require.NoError(t, extender.Delete(ctx, pod("ghost", map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.GhostLabel: "true"})))
	require.NoError(t, operator.Delete(ctx, executor), "others' deletes are RBAC's business alone")
}

// Only the extender writes a pod's slot claim, and only the worker makes ghosts (the
// admission policy slotplane-slot-keys): someone who may create, patch and bind pods in a
// test bed's namespace can forge neither, at creation, after it, or in a binding, while
// other changes to the same pods, and other bindings, pass.
func TestAdmissionPolicy_OnlyTheExtenderClaimsAndOnlyTheWorkerMakesGhosts(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := c.Client()
	const extenderSA, workerSA = "system:serviceaccount:slotplane-system:slotplane-extender", "system:serviceaccount:slotplane-system:slotplane-worker"
	grant(ctx, t, cs, "pod-writer", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/binding"}, Verbs: []string{"create"}}},
		extenderSA, workerSA, "mallory")
	mallory, extender, worker := impersonated(t, c, "mallory"), impersonated(t, c, extenderSA), impersonated(t, c, workerSA)
	pod := func(name string, labels, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels, Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/a:1"}}}}
	}
	bed := map[string]string{v1alpha1.TestBedLabel: "bed"}
	ghostLabels := map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.GhostLabel: "true"}

	require.Eventually(t, func() bool { // a dry run: the policy is in force a moment after it is type-checked
		return mallory.Create(ctx, pod("probe", bed, map[string]string{v1alpha1.SlotClaimAnnotation: "3/x"}), client.DryRunAll) != nil
	}, 30*time.Second, 200*time.Millisecond, "a pod made with a slot claim is refused")
	require.ErrorContains(t, mallory.Create(ctx, pod("claimed", bed, map[string]string{v1alpha1.SlotClaimAnnotation: "3/x"})),
		"the annotation slotplane.io/slot-claim is the extender's: mallory may not set or change it")
	require.ErrorContains(t, mallory.Create(ctx, pod("fake-ghost", ghostLabels, nil)), "the label slotplane.io/ghost is the worker's: mallory")
	require.NoError(t, worker.Create(ctx, pod("ghost", ghostLabels, nil)), "the worker makes ghosts")

	// After creation: the claim that would now be proven (it names the pod's real UID).
	exec := pod("exec", bed, nil)
	require.NoError(t, mallory.Create(ctx, exec), "a slot pod without slotplane's keys")
	claim := func(cl client.Client) error {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"3/%s"}}}`, v1alpha1.SlotClaimAnnotation, exec.UID)
		return cl.Patch(ctx, pod("exec", nil, nil), client.RawPatch(types.MergePatchType, patch))
	}
	require.ErrorContains(t, claim(mallory), "may not set or change it")
	require.NoError(t, claim(extender), "the extender claims")
	unclaim := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, v1alpha1.SlotClaimAnnotation)
	require.ErrorContains(t, mallory.Patch(ctx, pod("exec", nil, nil), client.RawPatch(types.MergePatchType, unclaim)), "may not set or change it")
	require.NoError(t, mallory.Patch(ctx, pod("exec", nil, nil), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`))),
		"other changes to a claimed pod pass")

	// In a binding, whose annotations the API server copies onto the pod it binds.
	bind := func(cl client.Client, name string, annotations map[string]string) error {
		p := pod(name, bed, nil)
		p.Spec.SchedulerName = "none" // no scheduler binds it first
		if err := mallory.Get(ctx, client.ObjectKeyFromObject(p), p); apierrors.IsNotFound(err) {
			require.NoError(t, mallory.Create(ctx, p))
		}
		if v, ok := annotations[v1alpha1.SlotClaimAnnotation]; ok {
			annotations = map[string]string{v1alpha1.SlotClaimAnnotation: strings.ReplaceAll(v, "UID", string(p.UID))}
		}
		return cl.SubResource("binding").Create(ctx, p, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: p.UID, Annotations: annotations},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "node-00"},
		})
	}
	claimOf := map[string]string{v1alpha1.SlotClaimAnnotation: "3/UID"}
	require.ErrorContains(t, bind(mallory, "bound", claimOf), "the annotation slotplane.io/slot-claim is the extender's: mallory")
	require.NoError(t, bind(mallory, "bound", map[string]string{"team": "a"}), "a binding without a claim passes")
	require.NoError(t, bind(extender, "bound-by-the-extender", claimOf), "the extender binds with the claim")
	var bound corev1.Pod
	require.NoError(t, mallory.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bound-by-the-extender"}, &bound))
	slot, ok := slots.ProvenSlot(&bound)
	require.True(t, ok, "the binding's claim is on the pod: %v", bound.Annotations)
	require.EqualValues(t, 3, slot)
	require.Equal(t, "node-00", bound.Spec.NodeName)

	unghost := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"false"}}}`, v1alpha1.GhostLabel)
	require.ErrorContains(t, mallory.Patch(ctx, pod("ghost", nil, nil), client.RawPatch(types.MergePatchType, unghost)), "is the worker's")
}

// slotplane's own keys on BatchJobs, Schedulings and TestBeds (claims, creation requests,
// kills, assigned slots) are written by its service accounts alone, and a spec by its user
// or whoever may submit for that user (the admission policies slotplane-own-keys and
// slotplane-owner-changes-spec): a tenant with the Role docs/operations.md gives, which grants update on
// BatchJobs, can neither forge a kill or a grant nor rewrite another user's job, while
// labels of its own, the stand-in operators' notes and scheduler data within their bounds
// pass.
func TestAdmissionPolicy_SlotplanesKeysAreItsOwnAndSpecsTheirUsers(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := c.Client()
	const workerSA, apiSA = "system:serviceaccount:slotplane-system:slotplane-worker", "system:serviceaccount:slotplane-system:slotplane-api"
	grant(ctx, t, cs, "slotplane-user", []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"batchjobs", "schedulings", "testbeds"}, Verbs: []string{"get", "create", "update", "patch"}},
	}, "mallory", "alice", "scheduler", workerSA, apiSA)
	grant(ctx, t, cs, "submit-for-anyone", submitForAnyone, "scheduler", apiSA)
	as := func(user string) client.Client { return impersonated(t, c, user) }
	mallory, alice, scheduler, worker, api := as("mallory"), as("alice"), as("scheduler"), as(workerSA), as(apiSA)
	job := func(name, user string) *v1alpha1.BatchJob {
		return &v1alpha1.BatchJob{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, User: user,
				Application: v1alpha1.Application{Image: "registry.example/a:1", MainApplicationFile: "local:///a.jar"}},
		}
	}
	// change reads key as c sees it, applies f, and writes it back: a kubectl edit.
	change := func(c client.Client, obj client.Object, f func()) error {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		f()
		return c.Update(ctx, obj)
	}
	setAnnotation := func(obj client.Object, k, v string) {
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[k] = v
		obj.SetAnnotations(a)
	}
	setLabel := func(obj client.Object, k, v string) {
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[k] = v
		obj.SetLabels(l)
	}

	alices := job("alices", "alice")
	require.NoError(t, alice.Create(ctx, alices))
	kill := `{"scheduling":"nightly","by":"root-admin","as":"an administrator of root","at":"2026-12-05T00:00:00Z"}`
	require.Eventually(t, func() bool { // the policy is in force a moment after it is type-checked
		probe := alices.DeepCopy()
		setAnnotation(probe, v1alpha1.KillAnnotation, kill)
		err := mallory.Update(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "slotplane's own keys are written by slotplane alone")
	}, 30*time.Second, 200*time.Millisecond, "a forged kill is refused")

	// A forged kill, claim, grant or assigned slots on another user's job, and a new image.
	request := `{"scheduling":"nightly","testBed":"bed","slots":[0,1,2,3,4,5,6,7],"run":1,"grantedAt":"2026-12-05T00:00:00.000000Z"}`
	for key, f := range map[string]func(){
		v1alpha1.KillAnnotation:            func() { setAnnotation(alices, v1alpha1.KillAnnotation, kill) },
		v1alpha1.CreationRequestAnnotation: func() { setAnnotation(alices, v1alpha1.CreationRequestAnnotation, request) },
		v1alpha1.AssignedSlotsAnnotation:   func() { setAnnotation(alices, v1alpha1.AssignedSlotsAnnotation, "0,1") },
		v1alpha1.ActiveSchedulingLabel:     func() { setLabel(alices, v1alpha1.ActiveSchedulingLabel, "mine") },
		v1alpha1.GrantedTestBedLabel:       func() { setLabel(alices, v1alpha1.GrantedTestBedLabel, "bed") },
	} {
		err := change(mallory, alices, f)
		require.ErrorContains(t, err, "mallory may not set, change or remove "+key, key)
		require.True(t, apierrors.IsForbidden(err), "%v", err)
	}
	err := change(mallory, alices, func() { alices.Spec.Application.Image = "evil/miner:1" })
	require.ErrorContains(t, err, "spec: mallory may not change a BatchJob of user alice")
	require.NoError(t, alice.Get(ctx, client.ObjectKeyFromObject(alices), alices))
	require.Equal(t, "registry.example/a:1", alices.Spec.Application.Image)
	require.Empty(t, alices.Annotations)

	// Its user, and a scheduler that may submit for it, change the spec; a label of one's
	// own and scheduler data within bounds pass for anyone who may update.
	require.NoError(t, change(alice, alices, func() { alices.Spec.Application.Image = "registry.example/a:2" }))
	require.NoError(t, change(scheduler, alices, func() { alices.Spec.Application.Image = "registry.example/a:3" }))
	require.NoError(t, change(mallory, alices, func() {
		setLabel(alices, "team", "a")
		setAnnotation(alices, v1alpha1.SchedulerDataPrefix+"estimate", "90s")
	}))

	// slotplane's worker writes its keys, and no tenant removes or changes them after it.
	require.NoError(t, change(worker, alices, func() {
		setLabel(alices, v1alpha1.ActiveSchedulingLabel, "nightly")
		setAnnotation(alices, v1alpha1.CreationRequestAnnotation, request)
	}))
	require.ErrorContains(t, change(alice, alices, func() { delete(alices.Labels, v1alpha1.ActiveSchedulingLabel) }), "alice may not set, change or remove "+v1alpha1.ActiveSchedulingLabel)
	require.ErrorContains(t, change(alice, alices, func() {
		setAnnotation(alices, v1alpha1.CreationRequestAnnotation, strings.Replace(request, `"run":1`, `"run":2`, 1))
	}),
		"alice may not set, change or remove "+v1alpha1.CreationRequestAnnotation)
	require.NoError(t, change(alice, alices, func() { setLabel(alices, "other", "x") }), "an update that leaves slotplane's keys as they are")

	// At creation too: a job made with a claim or a grant of its own is refused; the
	// stand-in operators' notes and scheduler data are the user's.
	forged := job("forged", "mallory")
	forged.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "mine"}
	forged.Annotations = map[string]string{v1alpha1.CreationRequestAnnotation: request}
	err = mallory.Create(ctx, forged)
	require.ErrorContains(t, err, "mallory may not set, change or remove "+v1alpha1.ActiveSchedulingLabel+", "+v1alpha1.CreationRequestAnnotation)
	own := job("own", "mallory")
	own.Annotations = map[string]string{"slotplane.io/sim-duration": "20s", v1alpha1.SchedulerDataPrefix + "estimate": "1m"}
	require.NoError(t, mallory.Create(ctx, own))

	// Scheduler data stays within its bounds: 64 notes (the job has one), 64 KiB of names
	// and values.
	err = change(mallory, own, func() {
		for i := range 65 {
			setAnnotation(own, fmt.Sprintf("%sn%02d", v1alpha1.SchedulerDataPrefix, i), "x")
		}
	})
	require.ErrorContains(t, err, "at most 64 notes of 64 KiB together; this has 66 notes")
	err = change(mallory, own, func() { setAnnotation(own, v1alpha1.SchedulerDataPrefix+"big", strings.Repeat("x", 64<<10)) })
	require.ErrorContains(t, err, "at most 64 notes of 64 KiB together")

	// A job without a user is anyone's to run, so its spec is changed only by whoever may
	// submit for anyone; the REST API's service account may.
	nobodys := job("nobodys", "")
	require.NoError(t, mallory.Create(ctx, nobodys))
	require.ErrorContains(t, change(mallory, nobodys, func() { nobodys.Spec.Queue = "root.other" }), "spec: mallory may not change a BatchJob without a user")
	require.NoError(t, change(api, nobodys, func() { nobodys.Spec.Queue = "root.other" }))

	// A Scheduling's spec is its user's too, and a TestBed's claim label is slotplane's.
	sched := testobjects.Scheduling("nightly").User("alice").Job("alices", 1).Obj()
	require.NoError(t, alice.Create(ctx, sched))
	err = change(mallory, sched, func() { sched.Spec.Jobs = append(sched.Spec.Jobs, v1alpha1.SchedulingJob{Name: "own", Replication: 1}) })
	require.ErrorContains(t, err, "spec: mallory may not change a Scheduling of user alice")
	require.ErrorContains(t, change(mallory, sched, func() { setAnnotation(sched, v1alpha1.ExtendRefusedAnnotation, "1: no") }), v1alpha1.ExtendRefusedAnnotation)
	require.NoError(t, change(alice, sched, func() { sched.Spec.Jobs = append(sched.Spec.Jobs, v1alpha1.SchedulingJob{Name: "own", Replication: 1}) }))
	bed := testobjects.TestBed("bed").Slots(1, "1", "1Gi").Obj()
	require.NoError(t, alice.Create(ctx, bed))
	require.ErrorContains(t, change(mallory, bed, func() { setLabel(bed, v1alpha1.ActiveSchedulingLabel, "nightly") }), v1alpha1.ActiveSchedulingLabel)
}

// submitForAnyone is slotplane's own verb submit-as on every user and group.
var submitForAnyone = []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"users", "groups"}, Verbs: []string{"submit-as"}}}

// grant makes the ClusterRole role of rules and binds it to each user.
func grant(ctx context.Context, t *testing.T, cs kubernetes.Interface, role string, rules []rbacv1.PolicyRule, users ...string) {
	t.Helper()
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
	require.NoError(t, err)
}

// impersonated is a client of c's API server acting as user, of groups.
func impersonated(t *testing.T, c *localcluster.Cluster, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cl, err := kubeclient.Live(cfg)
	require.NoError(t, err)
	return cl
}
