//go:build integration

package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"slotplane/activities"
	"slotplane/api"
	"slotplane/bridge"
	"slotplane/crds/v1alpha1"
	"slotplane/extender"
	"slotplane/installation"
	"slotplane/internal/kubeclient"
	"slotplane/internal/lease"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
	"slotplane/queue"
	"slotplane/worker"
)

// fieldOwner is the field manager of every apply here, as `kubectl apply --server-side
// --field-manager` would name one.
const fieldOwner = "slotplane-deploy-test"

// serviceAccountUser is the user name the API server gives a ServiceAccount's tokens.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// The render applies to a real API server, and each component can do its work, and no
// more, as its ServiceAccount.
func TestKustomize_AppliesToARealAPIServer(t *testing.T) {
	// One test bed node, for the worker's ghost pods below, and two plain nodes, over which
	// the replicas spread.
	c := localcluster.New(t, localcluster.Options{Nodes: 1, PlainNodes: 2})
	r := render(t, baseDir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	apply := serverSideApplier(ctx, t, c.Config)

	// A dry run into a namespace that does not exist fails, so the Namespace is real.
	for _, o := range r.objects {
		if o.Kind == "Namespace" {
			require.NoError(t, apply(o, false), "%s", o)
		}
	}
	t.Run("every object applies in a dry run", func(t *testing.T) {
		// The CRDs and PriorityClasses exist already (localcluster installs them): the apply
		// takes them over where the values agree.
		for _, o := range r.objects {
			require.NoError(t, apply(o, true), "%s", o)
		}
	})

	// The RBAC objects for real, to ask the API server about them.
	rbacKinds := map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}
	for _, o := range r.objects {
		if rbacKinds[o.Kind] {
			require.NoError(t, apply(o, false), "%s", o)
		}
	}
	d := &deployed{ctx: ctx, cluster: c, cs: c.Client(), r: r, ns: r.deployment(t, "worker").Namespace}
	t.Run("subject access reviews", d.subjectAccessReviews)

	// What follows runs the components' own code with their ServiceAccounts' rights.
	t.Run("bridge syncs its caches and takes its lease", d.bridgeSyncsItsCachesAndTakesItsLease)
	t.Run("extender takes its lease", d.extenderTakesItsLease)

	admin, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	d.admin = admin
	require.NoError(t, admin.Create(ctx, testobjects.TestBed(bedName).Namespace(bedNS).Obj()))

	t.Run("worker lays out a test bed and reads the queues", d.workerLaysOutTheBedAndReadsTheQueues)
	t.Run("extender syncs its informers and reads a pod it has not seen", d.extenderReadsAPodItHasNotSeen)
	t.Run("api checks tokens and access with the cluster", d.apiChecksTokensAndAccess)
	t.Run("replicas land on different nodes", d.replicasLandOnDifferentNodes)
}

// bedNS and bedName name the test bed TestKustomize_AppliesToARealAPIServer makes once the
// RBAC objects are in place.
const bedNS, bedName = "default", "bed"

// serverSideApplier is `kubectl apply --server-side` of one object, with unknown fields
// refused (a misspelt field would otherwise be dropped with a warning), or its dry run.
func serverSideApplier(ctx context.Context, t *testing.T, cfg *rest.Config) func(o renderedObject, dryRun bool) error {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return func(o renderedObject, dryRun bool) error {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return err
		}
		mapping, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}, gv.Version)
		if err != nil {
			return err
		}
		var res dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			res = dyn.Resource(mapping.Resource).Namespace(o.Namespace)
		}
		opts := metav1.PatchOptions{FieldManager: fieldOwner, FieldValidation: metav1.FieldValidationStrict}
		if o.Kind == "ValidatingAdmissionPolicy" || o.Kind == "ValidatingAdmissionPolicyBinding" {
			// localcluster created them (a plain create, whose manager owns matchConstraints
			// whole): take them over, as kubectl apply --server-side --force-conflicts would.
			force := true
			opts.Force = &force
		}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err = res.Patch(ctx, o.Name, types.ApplyPatchType, o.JSON, opts)
		return err
	}
}

// deployed is the cluster TestKustomize_AppliesToARealAPIServer applied the render's RBAC
// objects to, shared by its steps, which run in order.
type deployed struct {
	ctx     context.Context
	cluster *localcluster.Cluster
	cs      kubernetes.Interface
	r       *rendered
	// ns is the namespace the components run in.
	ns string
	// admin has the cluster's own rights; it is set before the steps that use it.
	admin client.Client
}

// user is the user name of component's ServiceAccount.
func (d *deployed) user(t *testing.T, component string) string {
	return serviceAccountUser(d.ns, d.r.deployment(t, component).Spec.Template.Spec.ServiceAccountName)
}

// as is the cluster's config acting as component's ServiceAccount.
func (d *deployed) as(t *testing.T, component string) *rest.Config {
	cfg := rest.CopyConfig(d.cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: d.user(t, component), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + d.ns}}
	return cfg
}

// accessCheck asks whether component's ServiceAccount may do verb on a resource, and says
// the answer expected.
type accessCheck struct {
	component                                           string
	verb, group, resource, subresource, namespace, name string
	allowed                                             bool
}

// userNS is any namespace users run test beds in.
const userNS = "team-a"

// subjectAccessReviews asks the API server's authorizer every accessCheck of every
// component.
func (d *deployed) subjectAccessReviews(t *testing.T) {
	checks := slices.Concat(workerAccess(), extenderAccess(), bridgeAccess(), apiAccess(), admissionAccess(), slotSchedulerAccess(d.ns),
		leaseAccess(d.ns, "extender", d.leaseName(t, "extender")), leaseAccess(d.ns, "bridge", d.leaseName(t, "bridge")),
		[]accessCheck{
			// The bridge's leader election records Events on its Lease, in its namespace only.
			{component: "bridge", verb: "create", resource: "events", namespace: d.ns, allowed: true},
			{component: "bridge", verb: "patch", resource: "events", namespace: d.ns, allowed: true},
			{component: "bridge", verb: "create", resource: "events", namespace: userNS},
			{component: "extender", verb: "create", resource: "events", namespace: d.ns},
		})
	review := func(ch accessCheck) (bool, error) {
		sar, err := d.cs.AuthorizationV1().SubjectAccessReviews().Create(d.ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:   d.user(t, ch.component),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + d.ns, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{
				Verb: ch.verb, Group: ch.group, Resource: ch.resource, Subresource: ch.subresource, Namespace: ch.namespace, Name: ch.name,
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	}
	// The API server's authorizer sees new bindings through its informers, a moment
	// after they are created: allowances are waited for, denials asked after them.
	for _, ch := range checks {
		if ch.allowed {
			require.Eventually(t, func() bool { ok, err := review(ch); return err == nil && ok }, 10*time.Second, 50*time.Millisecond,
				"%s may not %s %s/%s %s", ch.component, ch.verb, ch.resource, ch.subresource, ch.name)
		}
	}
	for _, ch := range checks {
		if !ch.allowed {
			ok, err := review(ch)
			require.NoError(t, err)
			require.False(t, ok, "%s may %s %s/%s %q in %q", ch.component, ch.verb, ch.resource, ch.subresource, ch.name, ch.namespace)
		}
	}
}

// workerAccess is what the worker may and may not do.
func workerAccess() []accessCheck {
	return []accessCheck{
		{component: "worker", verb: "create", resource: "pods", namespace: userNS, allowed: true},
		{component: "worker", verb: "delete", resource: "pods", namespace: userNS, allowed: true},
		{component: "worker", verb: "list", resource: "nodes", allowed: true},
		{component: "worker", verb: "create", resource: "events", namespace: userNS, allowed: true},
		{component: "worker", verb: "list", resource: "events", namespace: userNS, allowed: true},
		{component: "worker", verb: "delete", resource: "events", namespace: userNS},
		{component: "worker", verb: "create", group: "sparkoperator.k8s.io", resource: "sparkapplications", namespace: userNS, allowed: true},
		{component: "worker", verb: "create", group: "flink.apache.org", resource: "flinkdeployments", namespace: userNS, allowed: true},
		{component: "worker", verb: "update", group: "slotplane.io", resource: "batchjobs", subresource: "status", namespace: userNS, allowed: true},
		{component: "worker", verb: "patch", group: "slotplane.io", resource: "batchjobs", subresource: "status", namespace: userNS, allowed: true},
		{component: "worker", verb: "patch", group: "slotplane.io", resource: "batchjobs", namespace: userNS, allowed: true},
		{component: "worker", verb: "update", group: "slotplane.io", resource: "schedulings", subresource: "status", namespace: userNS, allowed: true},
		{component: "worker", verb: "list", group: "slotplane.io", resource: "batchjobs", namespace: userNS, allowed: true},
		{component: "worker", verb: "list", group: "slotplane.io", resource: "schedulings", namespace: userNS, allowed: true},
		{component: "worker", verb: "get", resource: "configmaps", namespace: userNS, name: v1alpha1.QueuesConfigMap, allowed: true},
		{component: "worker", verb: "get", resource: "configmaps", namespace: userNS, name: v1alpha1.JobPolicyConfigMap, allowed: true},
		{component: "worker", verb: "watch", resource: "configmaps", name: v1alpha1.QueuesConfigMap, allowed: true},
		{component: "worker", verb: "list", resource: "configmaps", name: v1alpha1.QueuesConfigMap, allowed: true},
		{component: "worker", verb: "list", resource: "configmaps"},
		{component: "worker", verb: "watch", resource: "configmaps", name: v1alpha1.JobPolicyConfigMap},
		{component: "worker", verb: "get", resource: "configmaps", namespace: userNS, name: "someone-elses"},
		{component: "worker", verb: "get", resource: "secrets", namespace: userNS},
		{component: "worker", verb: "patch", resource: "pods", namespace: userNS},
		{component: "worker", verb: "delete", group: "slotplane.io", resource: "batchjobs", namespace: userNS},
		{component: "worker", verb: "update", group: "slotplane.io", resource: "testbeds", namespace: userNS},
		{component: "worker", verb: "list", group: "slotplane.io", resource: "testbeds", allowed: true},
		{component: "worker", verb: "create", group: "slotplane.io", resource: "slotslices", namespace: userNS, allowed: true},
		{component: "worker", verb: "deletecollection", group: "slotplane.io", resource: "slotslices", namespace: userNS, allowed: true},
		{component: "worker", verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews", allowed: true},
		{component: "worker", verb: "submit-as", group: "slotplane.io", resource: "users", name: "alice"},
	}
}

// extenderAccess is what the extender may and may not do.
func extenderAccess() []accessCheck {
	return []accessCheck{
		{component: "extender", verb: "update", group: "slotplane.io", resource: "slotslices", namespace: userNS, allowed: true},
		{component: "extender", verb: "watch", group: "slotplane.io", resource: "slotslices", allowed: true},
		{component: "extender", verb: "create", group: "slotplane.io", resource: "slotslices", namespace: userNS},
		{component: "extender", verb: "update", group: "slotplane.io", resource: "testbeds", subresource: "status", namespace: userNS},
		{component: "extender", verb: "patch", resource: "pods", namespace: userNS, allowed: true},
		{component: "extender", verb: "get", resource: "pods", namespace: userNS, allowed: true},
		{component: "extender", verb: "watch", resource: "pods", allowed: true},
		{component: "extender", verb: "list", group: "slotplane.io", resource: "batchjobs", allowed: true},
		{component: "extender", verb: "create", resource: "pods", namespace: userNS},
		// ghosts only: the admission policy slotplane-extender-deletes-ghosts narrows it
		{component: "extender", verb: "delete", resource: "pods", namespace: userNS, allowed: true},
		{component: "extender", verb: "update", group: "slotplane.io", resource: "batchjobs", namespace: userNS},
	}
}

// bridgeAccess is what the bridge may and may not do.
func bridgeAccess() []accessCheck {
	return []accessCheck{
		{component: "bridge", verb: "update", group: "slotplane.io", resource: "schedulings", namespace: userNS, allowed: true},
		{component: "bridge", verb: "patch", group: "slotplane.io", resource: "schedulings", namespace: userNS, allowed: true},
		{component: "bridge", verb: "watch", resource: "nodes", allowed: true},
		{component: "bridge", verb: "list", resource: "configmaps", name: v1alpha1.QueuesConfigMap, allowed: true},
		{component: "bridge", verb: "watch", resource: "configmaps", name: v1alpha1.JobPolicyConfigMap, allowed: true},
		{component: "bridge", verb: "list", resource: "configmaps"},
		{component: "bridge", verb: "update", group: "slotplane.io", resource: "testbeds", namespace: userNS},
		{component: "bridge", verb: "update", group: "slotplane.io", resource: "testbeds", subresource: "status", namespace: userNS, allowed: true},
		{component: "bridge", verb: "create", resource: "pods", namespace: userNS},
	}
}

// apiAccess is what the REST API may and may not do.
func apiAccess() []accessCheck {
	return []accessCheck{
		{component: "api", verb: "create", group: "slotplane.io", resource: "schedulings", namespace: userNS, allowed: true},
		{component: "api", verb: "delete", group: "slotplane.io", resource: "schedulings", namespace: userNS, allowed: true},
		{component: "api", verb: "create", group: "slotplane.io", resource: "batchjobs", namespace: userNS, allowed: true},
		{component: "api", verb: "watch", group: "slotplane.io", resource: "testbeds", allowed: true},
		{component: "api", verb: "watch", group: "slotplane.io", resource: "slotslices", allowed: true},
		{component: "api", verb: "update", group: "slotplane.io", resource: "slotslices", namespace: userNS},
		{component: "api", verb: "create", group: "authentication.k8s.io", resource: "tokenreviews", allowed: true},
		{component: "api", verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews", allowed: true},
		{component: "api", verb: "get", resource: "configmaps", namespace: userNS, name: v1alpha1.JobPolicyConfigMap, allowed: true},
		{component: "api", verb: "submit-as", group: "slotplane.io", resource: "users", name: "alice", allowed: true},
		{component: "api", verb: "impersonate", resource: "users", name: "alice"},
		{component: "api", verb: "get", resource: "configmaps", namespace: userNS, name: v1alpha1.QueuesConfigMap},
		{component: "api", verb: "delete", resource: "pods", namespace: userNS},
		{component: "api", verb: "update", group: "slotplane.io", resource: "batchjobs", namespace: userNS, allowed: true},
		{component: "api", verb: "update", group: "slotplane.io", resource: "batchjobs", subresource: "status", namespace: userNS},
		{component: "api", verb: "update", group: "slotplane.io", resource: "testbeds", subresource: "status", namespace: userNS},
	}
}

// admissionAccess is what Admission's worker may and may not do.
func admissionAccess() []accessCheck {
	return []accessCheck{
		// Admission's worker: its copies, CheckHolds, RecordQueues, LoadAllocationFile.
		{component: "admission", verb: "watch", group: "slotplane.io", resource: "slotslices", allowed: true},
		{component: "admission", verb: "watch", group: "slotplane.io", resource: "batchjobs", allowed: true},
		{component: "admission", verb: "list", group: "slotplane.io", resource: "schedulings", namespace: userNS, allowed: true},
		{component: "admission", verb: "patch", group: "slotplane.io", resource: "batchjobs", subresource: "status", namespace: userNS, allowed: true},
		{component: "admission", verb: "get", resource: "configmaps", namespace: userNS, name: v1alpha1.QueuesConfigMap, allowed: true},
		{component: "admission", verb: "get", resource: "configmaps", namespace: userNS, name: "someone-elses"},
		{component: "admission", verb: "get", resource: "secrets", namespace: userNS},
	}
}

// slotSchedulerAccess is what the slot scheduler may and may not do; its leases are in ns.
func slotSchedulerAccess(ns string) []accessCheck {
	return []accessCheck{
		{component: "slot-scheduler", verb: "create", resource: "pods", subresource: "binding", namespace: userNS, allowed: true},
		{component: "slot-scheduler", verb: "delete", resource: "pods", namespace: userNS, allowed: true},
		{component: "slot-scheduler", verb: "get", resource: "persistentvolumeclaims", namespace: userNS, allowed: true},
		{component: "slot-scheduler", verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: ns, allowed: true},
		{component: "slot-scheduler", verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "slot-scheduler", allowed: true},
		{component: "slot-scheduler", verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "someone-elses"},
		{component: "slot-scheduler", verb: "get", resource: "secrets", namespace: userNS},
		{component: "slot-scheduler", verb: "update", group: "slotplane.io", resource: "testbeds", namespace: userNS},
	}
}

// leaseName is the Lease that component's args name.
func (d *deployed) leaseName(t *testing.T, component string) string {
	name := flagValue(d.r.deployment(t, component).Spec.Template.Spec.Containers[0].Args, "-lease-name")
	require.NotEmpty(t, name, "%s names no -lease-name", component)
	return name
}

// leaseAccess is what component may do to Leases in ns: campaign for its own, named name, and
// touch no other.
func leaseAccess(ns, component, name string) []accessCheck {
	return []accessCheck{
		{component: component, verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: ns, allowed: true},
		{component: component, verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: name, allowed: true},
		{component: component, verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: name, allowed: true},
		{component: component, verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "slot-scheduler"},
		{component: component, verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "kube-scheduler"},
		{component: component, verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: name},
		{component: component, verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: userNS},
	}
}

// bridgeSyncsItsCachesAndTakesItsLease starts the bridge as its ServiceAccount, with leader
// election on the Lease its args name, waits for every cache its controllers watch, and for
// the Lease.
func (d *deployed) bridgeSyncsItsCachesAndTakesItsLease(t *testing.T) {
	ctx := d.ctx
	// No Temporal here: it runs before any TestBed exists, so it has nothing to signal;
	// only its watches and its Lease are the point.
	name := d.leaseName(t, "bridge")
	mgr, err := bridge.New(d.as(t, "bridge"), lazyTemporal(t), bridge.Options{Lease: bridge.LeaseOptions{Namespace: d.ns, Name: name}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	// The caches the bridge's controllers watch, asked for by kind.
	for _, obj := range []client.Object{&v1alpha1.TestBed{}, &v1alpha1.BatchJob{}, &v1alpha1.Scheduling{}, &corev1.Node{}, &corev1.Pod{}, &corev1.ConfigMap{}} {
		inf, err := mgr.GetCache().GetInformer(syncCtx, obj)
		require.NoError(t, err, "%T", obj)
		require.Eventually(t, inf.HasSynced, 30*time.Second, 50*time.Millisecond, "%T", obj)
	}
	select {
	case <-mgr.Elected():
	case <-syncCtx.Done():
		t.Fatalf("the bridge did not take the Lease %s/%s", d.ns, name)
	}
	held, err := d.cs.CoordinationV1().Leases(d.ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, held.Spec.HolderIdentity, "the Lease names no holder")
	stop()
	require.NoError(t, <-done)

	// The ConfigMap rule has a resourceName; a list with the name's field selector is
	// what the cache sends, and nothing broader passes.
	bridgeCS, err := kubernetes.NewForConfig(d.as(t, "bridge"))
	require.NoError(t, err)
	_, err = bridgeCS.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", v1alpha1.QueuesConfigMap).String()})
	require.NoError(t, err)
	_, err = bridgeCS.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing every ConfigMap: %v", err)
}

// extenderTakesItsLease campaigns, as the extender's ServiceAccount, for the Lease its args
// name, as slotplane extender -leader-elect does, until it holds it; then gives it up.
func (d *deployed) extenderTakesItsLease(t *testing.T) {
	name := d.leaseName(t, "extender")
	e, err := lease.New(d.as(t, "extender"), lease.Options{Namespace: d.ns, Name: name})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(d.ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
	}()
	require.Eventually(t, e.Held, 30*time.Second, 50*time.Millisecond, "the extender did not take the Lease %s/%s", d.ns, name)
	stop()
	require.NoError(t, <-done)
	released, err := d.cs.CoordinationV1().Leases(d.ns).Get(d.ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, released.Spec.HolderIdentity, "the extender did not give the Lease up")
}

// workerLaysOutTheBedAndReadsTheQueues runs the worker's activities as its ServiceAccount:
// the test bed's ghosts, the queues, claims, and the workflows a dead worker may have held.
func (d *deployed) workerLaysOutTheBedAndReadsTheQueues(t *testing.T) {
	ctx := d.ctx
	cl, err := kubeclient.Live(d.as(t, "worker"))
	require.NoError(t, err)
	a := &activities.Activities{Client: cl}
	res, err := a.ReconcileTestBed(ctx, activities.TestBedRef{Namespace: bedNS, Name: bedName})
	require.NoError(t, err)
	require.Equal(t, 2, res.Created, "one ghost pod per slot of the one node: %+v", res)
	_, err = a.LoadAllocationFile(ctx, activities.AllocationFileRef{Namespace: bedNS, ConfigMap: v1alpha1.QueuesConfigMap})
	require.NoError(t, err)
	// The worker's copy of the allocation files lists and watches them by name.
	workerCS, err := kubernetes.NewForConfig(d.as(t, "worker"))
	require.NoError(t, err)
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", v1alpha1.QueuesConfigMap).String()}
	_, err = workerCS.CoreV1().ConfigMaps("").List(ctx, byName)
	require.NoError(t, err)
	w, err := workerCS.CoreV1().ConfigMaps("").Watch(ctx, byName)
	require.NoError(t, err)
	w.Stop()
	_, err = a.CheckHolds(ctx, activities.CheckHoldsInput{Namespace: bedNS, TestBed: "bed", Keys: []queue.JobKey{{Scheduling: "nightly", Job: "j", Run: 1}}})
	require.NoError(t, err)
	// A claim patches the job's label and writes its status; Admission patches the
	// queue into the status; a starting worker lists what a dead one may have held.
	for _, name := range []string{"claimed-1", "claimed-2"} {
		require.NoError(t, d.admin.Create(ctx, testobjects.BatchJob(name).Namespace(bedNS).Obj()))
	}
	res2, err := a.ClaimJobs(ctx, activities.ClaimInput{Namespace: bedNS, Scheduling: "nightly", Names: []string{"claimed-1", "claimed-2"}})
	require.NoError(t, err)
	require.Equal(t, []string{"claimed-1", "claimed-2"}, res2.Claimed)
	require.Equal(t, []string{"claimed-1", "claimed-2"}, res2.Queued)
	require.NoError(t, a.RecordQueues(ctx, activities.RecordQueuesInput{Namespace: bedNS,
		Placements: []activities.QueuePlacement{{Scheduling: "nightly", Job: "claimed-1", Queue: "root.default"}}}))
	var queued v1alpha1.BatchJob
	require.NoError(t, d.admin.Get(ctx, client.ObjectKey{Namespace: bedNS, Name: "claimed-1"}, &queued))
	require.Equal(t, "root.default", queued.Status.Queue)
	ids, err := worker.ActiveWorkflows(ctx, cl, installation.Default, nil)
	require.NoError(t, err)
	require.Contains(t, ids, installation.Default.AdmissionID(bedNS, bedName))
}

// extenderReadsAPodItHasNotSeen starts the extender as its ServiceAccount and asks it to
// filter a pod outside its informer.
func (d *deployed) extenderReadsAPodItHasNotSeen(t *testing.T) {
	ctx := d.ctx
	certs, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	serverTLS, err := extender.ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	require.NoError(t, err)
	srv, err := extender.Start(ctx, d.as(t, "extender"), "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)), extender.WithTLS(serverTLS))
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()
	// A pod outside its informer (no test bed label) is read live: allowed, and the
	// answer says the UID does not match, not that the read was forbidden.
	plain, err := d.cs.CoreV1().Pods(bedNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Annotations: map[string]string{v1alpha1.SlotIDsAnnotation: "0"}},
		Spec:       corev1.PodSpec{SchedulerName: "no-scheduler", Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	plain.UID = "not-its-uid"
	plain.Labels = map[string]string{v1alpha1.TestBedLabel: bedName}
	body, err := json.Marshal(map[string]any{"Pod": plain, "NodeNames": []string{}})
	require.NoError(t, err)
	clientTLS, err := certs.ClientTLS()
	require.NoError(t, err)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(srv.URL+"filter", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer struct{ Error string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	require.Contains(t, answer.Error, "the request names uid not-its-uid")
}

// apiChecksTokensAndAccess starts the REST API as its ServiceAccount, with the cluster
// checking tokens and access: a user reads only what RBAC grants it, and the API writes
// scheduler data with its own role's rights.
func (d *deployed) apiChecksTokensAndAccess(t *testing.T) {
	ctx := d.ctx
	// A user with a token and the right to read test beds in the bed's namespace.
	const who = "alice"
	_, err := d.cs.CoreV1().ServiceAccounts(bedNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: who}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr, err := d.cs.CoreV1().ServiceAccounts(bedNS).CreateToken(ctx, who, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = d.cs.RbacV1().Roles(bedNS).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "testbed-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"testbeds"}, Verbs: []string{"get"}},
			{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"batchjobs"}, Verbs: []string{"get", "update"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = d.cs.RbacV1().RoleBindings(bedNS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-testbeds"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "testbed-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: who, Namespace: bedNS}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The API as `slotplane api -auth=kubernetes` builds it, as its ServiceAccount.
	cfg := d.as(t, "api")
	cl, err := kubeclient.Live(cfg)
	require.NoError(t, err)
	s, err := api.Start(api.Options{
		Client: cl, Temporal: lazyTemporal(t), Namespace: bedNS, Config: cfg,
		Auth: &api.KubeTokens{Client: cl, TTL: -1}, Authorizer: &api.KubeAccess{Client: cl, AllowedTTL: -1, DeniedTTL: -1},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Stop()) }()

	get := func(path string) (int, map[string]any) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1"+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	// The RoleBinding reaches the API server's authorizer a moment after its creation.
	require.Eventually(t, func() bool { code, _ := get("/testbeds/" + bedName); return code == http.StatusOK }, 10*time.Second, 100*time.Millisecond,
		"alice cannot read the test bed through the API")
	code, body := get("/schedulings")
	require.Equal(t, http.StatusForbidden, code, "alice listing Schedulings: %v", body)

	// Scheduler data is written by the API with its own role's update on BatchJobs,
	// under the admission policies.
	require.NoError(t, d.admin.Create(ctx, testobjects.BatchJob("noted").Namespace(bedNS).Obj()))
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, s.URL+"/api/v1/jobs/noted/scheduler-data?namespace="+bedNS, strings.NewReader(`{"estimate":"90s"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	patched, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", patched)
	var noted v1alpha1.BatchJob
	require.NoError(t, d.admin.Get(ctx, client.ObjectKey{Namespace: bedNS, Name: "noted"}, &noted))
	require.Equal(t, "90s", noted.Annotations[v1alpha1.SchedulerDataPrefix+"estimate"])
}

// replicasLandOnDifferentNodes schedules each component's two replicas (bare pods of its
// Deployment's template, as its ReplicaSet would make them) with the cluster's scheduler, on
// nodes that are all half full but one: by resources alone both would land on that one, as
// two control pods without the anti-affinity show.
func (d *deployed) replicasLandOnDifferentNodes(t *testing.T) {
	ctx := d.ctx
	nodes, err := d.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(nodes.Items), 3)
	empty := nodes.Items[len(nodes.Items)-1].Name
	for _, n := range nodes.Items {
		if n.Name == empty {
			continue
		}
		half := corev1.ResourceList{}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q := n.Status.Allocatable[res]
			half[res] = *resource.NewMilliQuantity(q.MilliValue()/2, q.Format)
		}
		_, err := d.cs.CoreV1().Pods(bedNS).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "filler-" + n.Name},
			Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "c", Image: "pause",
				Resources: corev1.ResourceRequirements{Requests: half, Limits: half}}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// place creates a pod of dep's template, waits until the scheduler binds it, and says
	// where. A control pod has no anti-affinity, and labels no anti-affinity selects.
	place := func(dep appsv1.Deployment, control bool) string {
		spec := *dep.Spec.Template.Spec.DeepCopy()
		podLabels := dep.Spec.Template.Labels
		if control {
			spec.Affinity = nil
			podLabels = map[string]string{"app.kubernetes.io/component": "control"}
		}
		pod, err := d.cs.CoreV1().Pods(dep.Namespace).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: dep.Name + "-", Labels: podLabels},
			Spec:       spec,
		}, metav1.CreateOptions{})
		require.NoError(t, err, "a pod of %s", dep.Name)
		var node string
		require.Eventually(t, func() bool {
			got, err := d.cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			node = got.Spec.NodeName
			return err == nil && node != ""
		}, 30*time.Second, 50*time.Millisecond, "pod %s of %s is not scheduled", pod.Name, dep.Name)
		t.Cleanup(func() {
			zero := int64(0)
			_ = d.cs.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		return node
	}
	worker := d.r.deployment(t, "worker")
	require.Equal(t, empty, place(worker, true), "the first control pod: on the emptiest node")
	require.Equal(t, empty, place(worker, true), "the second control pod: beside the first, where the resources are")
	for _, dep := range d.r.deployments {
		first := place(dep, false)
		require.Equal(t, empty, first, "the first replica of %s: on the emptiest node", dep.Name)
		require.NotEqual(t, first, place(dep, false), "both replicas of %s on one node", dep.Name)
	}
}

// lazyTemporal is a Temporal client that connects only when used; nothing here uses it
// successfully.
func lazyTemporal(t *testing.T) temporal.Client {
	t.Helper()
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return tc
}

// `kubectl kustomize` (the kustomize built into kubectl, which `kubectl apply -k` uses, a
// release apart from the library the other tests render with) names the image make image
// builds for every component, and leaves the scheduler's alone.
func TestKustomize_KubectlRendersTheImageMakeImageBuilds(t *testing.T) {
	kubeBin := os.Getenv(localcluster.EnvKubeBin)
	if kubeBin == "" {
		t.Fatalf("%s is not set: make tools builds kubectl, and the Makefile sets it", localcluster.EnvKubeBin)
	}
	out, err := exec.Command(filepath.Join(kubeBin, "kubectl"), "kustomize", baseDir).Output()
	require.NoError(t, err, "kubectl kustomize %s", baseDir)
	name, tag := madeImage(t)
	images := map[string][]string{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var d appsv1.Deployment
		require.NoError(t, yaml.Unmarshal([]byte(doc), &d))
		if d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			component := d.Spec.Template.Labels["app.kubernetes.io/component"]
			images[component] = append(images[component], c.Image)
		}
	}
	for _, component := range slotplaneComponents {
		require.Equal(t, []string{name + ":" + tag}, images[component], "the images of %s", component)
	}
	require.Len(t, images["slot-scheduler"], 1)
	require.True(t, strings.HasPrefix(images["slot-scheduler"][0], "registry.k8s.io/kube-scheduler:"), "the scheduler runs %s", images["slot-scheduler"][0])
}
