package deploy_test

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	schedulerv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"slotplane/bridge"
	"slotplane/crds"
	"slotplane/crds/v1alpha1"
	"slotplane/deploy"
	"slotplane/installation"
)

// The base is this package's own folder.
const baseDir = "."

// The ClusterRoles of Kubernetes itself that the base binds; every other role it binds must
// be in the render.
var builtinClusterRoles = []string{"system:kube-scheduler", "system:volume-scheduler", "system:auth-delegator"}

// rendered is a kustomize build, each object decoded strictly into its API type: a field
// the type does not have (a typo, a misplaced key) fails the test.
type rendered struct {
	objects []renderedObject // in the build's order, as JSON

	namespaces          []corev1.Namespace
	serviceAccounts     []corev1.ServiceAccount
	configMaps          []corev1.ConfigMap
	secrets             []corev1.Secret
	services            []corev1.Service
	deployments         []appsv1.Deployment
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roles               []rbacv1.Role
	roleBindings        []rbacv1.RoleBinding
	networkPolicies     []networkingv1.NetworkPolicy
	disruptionBudgets   []policyv1.PodDisruptionBudget
	priorityClasses     []schedulingv1.PriorityClass
	crds                []apiextensionsv1.CustomResourceDefinition
	admissionPolicies   []admissionv1.ValidatingAdmissionPolicy
	policyBindings      []admissionv1.ValidatingAdmissionPolicyBinding
	webhooks            []admissionv1.ValidatingWebhookConfiguration
}

// renderedObject is one object of a build as kustomize wrote it.
type renderedObject struct {
	APIVersion, Kind, Namespace, Name string
	JSON                              []byte
}

func (o renderedObject) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// render builds the kustomization in dir as `kubectl apply -k` would.
func render(t testing.TB, dir string) *rendered {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out := &rendered{}
	for _, r := range m.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		o := renderedObject{APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName(), JSON: js}
		out.objects = append(out.objects, o)
		switch o.Kind {
		case "Namespace":
			decodeInto(t, o, &out.namespaces)
		case "ServiceAccount":
			decodeInto(t, o, &out.serviceAccounts)
		case "ConfigMap":
			decodeInto(t, o, &out.configMaps)
		case "Secret":
			decodeInto(t, o, &out.secrets)
		case "Service":
			decodeInto(t, o, &out.services)
		case "Deployment":
			decodeInto(t, o, &out.deployments)
		case "ClusterRole":
			decodeInto(t, o, &out.clusterRoles)
		case "ClusterRoleBinding":
			decodeInto(t, o, &out.clusterRoleBindings)
		case "Role":
			decodeInto(t, o, &out.roles)
		case "RoleBinding":
			decodeInto(t, o, &out.roleBindings)
		case "NetworkPolicy":
			decodeInto(t, o, &out.networkPolicies)
		case "PodDisruptionBudget":
			decodeInto(t, o, &out.disruptionBudgets)
		case "PriorityClass":
			decodeInto(t, o, &out.priorityClasses)
		case "CustomResourceDefinition":
			decodeInto(t, o, &out.crds)
		case "ValidatingAdmissionPolicy":
			decodeInto(t, o, &out.admissionPolicies)
		case "ValidatingAdmissionPolicyBinding":
			decodeInto(t, o, &out.policyBindings)
		case "ValidatingWebhookConfiguration":
			decodeInto(t, o, &out.webhooks)
		default:
			// A new kind needs its checks here first.
			t.Errorf("%s: a kind these tests do not know", o)
		}
	}
	return out
}

func decodeInto[T any](t testing.TB, o renderedObject, list *[]T) {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict(o.JSON, &v); err != nil {
		t.Errorf("%s does not decode strictly: %v", o, err)
		return
	}
	*list = append(*list, v)
}

// deployment returns the Deployment whose first container runs the given slotplane
// subcommand (or, for the scheduler, has that container name).
func (r *rendered) deployment(t testing.TB, component string) appsv1.Deployment {
	t.Helper()
	for _, d := range r.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == component {
			return d
		}
	}
	t.Fatalf("no Deployment of component %s", component)
	return appsv1.Deployment{}
}

// configMap returns the ConfigMap a generator named (kustomize appends a hash).
func (r *rendered) configMap(t testing.TB, generatorName string) corev1.ConfigMap {
	t.Helper()
	for _, cm := range r.configMaps {
		if strings.HasPrefix(cm.Name, generatorName+"-") || cm.Name == generatorName {
			return cm
		}
	}
	t.Fatalf("no ConfigMap %s", generatorName)
	return corev1.ConfigMap{}
}

// podsSelected are the Deployments in namespace whose pods sel selects.
func (r *rendered) podsSelected(namespace string, sel metav1.LabelSelector) []appsv1.Deployment {
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return nil
	}
	var out []appsv1.Deployment
	for _, d := range r.deployments {
		if d.Namespace == namespace && s.Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, d)
		}
	}
	return out
}

// containerPort resolves a Service's or probe's port (a number or a name) in a pod spec.
func containerPort(spec corev1.PodSpec, port intstr.IntOrString) (int32, bool) {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// pinned is whether an image names a fixed version: a digest, or a tag other than latest.
func pinned(image string) bool {
	if strings.Contains(image, "@sha256:") {
		return true
	}
	last := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(last, ":")
	return i > 0 && i < len(last)-1 && last[i+1:] != "latest"
}

// Every Deployment runs as a locked-down, bounded, pinned process under a ServiceAccount of
// its own that the render holds.
func TestKustomize_DeploymentsRunLockedDownUnderTheirServiceAccounts(t *testing.T) {
	r := render(t, baseDir)
	if len(r.deployments) != 6 {
		t.Errorf("%d Deployments, want 6 (worker, admission, extender, bridge, api, slot-scheduler)", len(r.deployments))
	}
	usedSAs := map[string]string{}
	for _, d := range r.deployments {
		spec := d.Spec.Template.Spec
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: its selector does not select its own pods", d.Name)
		}
		if spec.ServiceAccountName == "" {
			t.Errorf("Deployment %s runs as the namespace's default ServiceAccount", d.Name)
		} else if !slices.ContainsFunc(r.serviceAccounts, func(sa corev1.ServiceAccount) bool {
			return sa.Name == spec.ServiceAccountName && sa.Namespace == d.Namespace
		}) {
			t.Errorf("Deployment %s: ServiceAccount %s/%s is not in the render", d.Name, d.Namespace, spec.ServiceAccountName)
		}
		if other, ok := usedSAs[spec.ServiceAccountName]; ok {
			t.Errorf("Deployments %s and %s share ServiceAccount %s: each component gets its own", other, d.Name, spec.ServiceAccountName)
		}
		usedSAs[spec.ServiceAccountName] = d.Name

		psc := spec.SecurityContext
		switch {
		case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot:
			t.Errorf("Deployment %s: pod securityContext.runAsNonRoot is not true", d.Name)
		case psc.RunAsUser == nil || *psc.RunAsUser == 0:
			// Neither image declares a numeric user; without one the kubelet refuses the pod.
			t.Errorf("Deployment %s: pod securityContext.runAsUser is not a non-root uid", d.Name)
		case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Errorf("Deployment %s: pod seccompProfile is not RuntimeDefault", d.Name)
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("Deployment %s shares a host namespace", d.Name)
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			name := d.Name + "/" + c.Name
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s: no securityContext", name)
				continue
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("%s: allowPrivilegeEscalation is not false", name)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Errorf("%s: readOnlyRootFilesystem is not true", name)
			case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
				t.Errorf("%s: capabilities do not drop ALL (or add some)", name)
			case sc.Privileged != nil && *sc.Privileged, sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot, sc.RunAsUser != nil && *sc.RunAsUser == 0:
				t.Errorf("%s: the container undoes the pod's non-root settings", name)
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, okReq := c.Resources.Requests[res]
				lim, okLim := c.Resources.Limits[res]
				if !okReq || !okLim {
					t.Errorf("%s: %s needs both a request and a limit", name, res)
				} else if req.Cmp(lim) > 0 {
					t.Errorf("%s: %s request %s above its limit %s", name, res, req.String(), lim.String())
				}
			}
			if !pinned(c.Image) {
				t.Errorf("%s: image %q is not pinned to a tag or digest", name, c.Image)
			}
		}
	}
}

// Every ServiceAccount is bound, every binding names subjects and roles that exist, and every
// role of the render is bound.
func TestKustomize_EveryServiceAccountIsBoundToRolesThatExist(t *testing.T) {
	r := render(t, baseDir)
	type binding struct {
		name, namespace string // namespace is empty for a ClusterRoleBinding
		ref             rbacv1.RoleRef
		subjects        []rbacv1.Subject
	}
	var bindings []binding
	for _, b := range r.clusterRoleBindings {
		bindings = append(bindings, binding{b.Name, "", b.RoleRef, b.Subjects})
	}
	for _, b := range r.roleBindings {
		bindings = append(bindings, binding{b.Name, b.Namespace, b.RoleRef, b.Subjects})
	}
	boundRoles := map[string]bool{}
	for _, b := range bindings {
		switch b.ref.Kind {
		case "ClusterRole":
			if !slices.Contains(builtinClusterRoles, b.ref.Name) && !slices.ContainsFunc(r.clusterRoles, func(c rbacv1.ClusterRole) bool { return c.Name == b.ref.Name }) {
				t.Errorf("binding %s: ClusterRole %s is neither in the render nor a known built-in", b.name, b.ref.Name)
			}
			boundRoles["ClusterRole/"+b.ref.Name] = true
		case "Role":
			if b.namespace == "" {
				t.Errorf("ClusterRoleBinding %s refers to a Role", b.name)
			}
			if !slices.ContainsFunc(r.roles, func(ro rbacv1.Role) bool { return ro.Name == b.ref.Name && ro.Namespace == b.namespace }) {
				t.Errorf("binding %s: Role %s/%s is not in the render", b.name, b.namespace, b.ref.Name)
			}
			boundRoles["Role/"+b.namespace+"/"+b.ref.Name] = true
		default:
			t.Errorf("binding %s: roleRef kind %q", b.name, b.ref.Kind)
		}
		if len(b.subjects) == 0 {
			t.Errorf("binding %s has no subjects", b.name)
		}
		for _, s := range b.subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				t.Errorf("binding %s binds %s %s: the base binds only its own ServiceAccounts", b.name, s.Kind, s.Name)
				continue
			}
			if !slices.ContainsFunc(r.serviceAccounts, func(sa corev1.ServiceAccount) bool { return sa.Name == s.Name && sa.Namespace == s.Namespace }) {
				t.Errorf("binding %s: ServiceAccount %s/%s is not in the render", b.name, s.Namespace, s.Name)
			}
		}
	}
	for _, sa := range r.serviceAccounts {
		bound := slices.ContainsFunc(bindings, func(b binding) bool {
			return slices.ContainsFunc(b.subjects, func(s rbacv1.Subject) bool {
				return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa.Name && s.Namespace == sa.Namespace
			})
		})
		if !bound {
			t.Errorf("ServiceAccount %s/%s is bound to nothing", sa.Namespace, sa.Name)
		}
	}
	for _, c := range r.clusterRoles {
		if !boundRoles["ClusterRole/"+c.Name] {
			t.Errorf("ClusterRole %s is bound to nobody", c.Name)
		}
	}
	for _, ro := range r.roles {
		if !boundRoles["Role/"+ro.Namespace+"/"+ro.Name] {
			t.Errorf("Role %s/%s is bound to nobody", ro.Namespace, ro.Name)
		}
	}
}

// No role of the render grants a wildcard, reads Secrets, or lets its holder raise its own
// privileges.
func TestKustomize_NoRoleGrantsWildcardsSecretsOrEscalation(t *testing.T) {
	r := render(t, baseDir)
	check := func(role string, rules []rbacv1.PolicyRule) {
		if len(rules) == 0 {
			t.Errorf("%s has no rules", role)
		}
		for i, rule := range rules {
			where := role + " rule " + strconv.Itoa(i)
			for _, list := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames, rule.NonResourceURLs} {
				if slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, "*") }) {
					t.Errorf("%s grants a wildcard: %+v", where, rule)
				}
			}
			if slices.ContainsFunc(rule.Resources, func(s string) bool { return s == "secrets" || strings.HasPrefix(s, "secrets/") }) {
				t.Errorf("%s grants access to Secrets: %+v", where, rule)
			}
			if slices.ContainsFunc(rule.Verbs, func(v string) bool { return v == "escalate" || v == "bind" || v == "impersonate" }) {
				t.Errorf("%s grants escalate, bind or impersonate: %+v", where, rule)
			}
			if slices.ContainsFunc(rule.Resources, func(s string) bool { return strings.HasSuffix(s, "roles") || strings.HasSuffix(s, "rolebindings") }) {
				t.Errorf("%s lets its holder change RBAC: %+v", where, rule)
			}
		}
	}
	for _, c := range r.clusterRoles {
		if c.AggregationRule != nil {
			t.Errorf("ClusterRole %s aggregates other roles", c.Name)
		}
		check("ClusterRole "+c.Name, c.Rules)
	}
	for _, ro := range r.roles {
		check("Role "+ro.Namespace+"/"+ro.Name, ro.Rules)
	}
}

// kube-scheduler calls the extender at a Service of the render, on the port the extender
// listens on, in both the in-cluster and the local scheduler configuration.
func TestKustomize_ExtenderServiceIsWhereTheSchedulerCallsIt(t *testing.T) {
	r := render(t, baseDir)
	local := decodeSchedulerConfig(t, deploy.SchedulerConfig)
	inCluster := decodeSchedulerConfig(t, []byte(r.configMap(t, "slotplane-slot-scheduler-config").Data["config.yaml"]))
	if len(local.Extenders) != 1 || len(inCluster.Extenders) != 1 {
		t.Fatalf("want one extender in each configuration, have %d (local) and %d (in cluster)", len(local.Extenders), len(inCluster.Extenders))
	}
	if local.Extenders[0].URLPrefix != inCluster.Extenders[0].URLPrefix {
		t.Errorf("the configurations call the extender at %s (local) and %s (in cluster)", local.Extenders[0].URLPrefix, inCluster.Extenders[0].URLPrefix)
	}
	u, err := url.Parse(inCluster.Extenders[0].URLPrefix)
	if err != nil {
		t.Fatal(err)
	}
	// <service>.<namespace>.svc
	parts := strings.Split(u.Hostname(), ".")
	if len(parts) != 3 || parts[2] != "svc" {
		t.Fatalf("urlPrefix host %q is not <service>.<namespace>.svc", u.Hostname())
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("urlPrefix %s names no port", u)
	}
	i := slices.IndexFunc(r.services, func(s corev1.Service) bool { return s.Name == parts[0] && s.Namespace == parts[1] })
	if i < 0 {
		t.Fatalf("no Service %s/%s, which the scheduler's urlPrefix names", parts[1], parts[0])
	}
	svc := r.services[i]
	j := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int(p.Port) == port })
	if j < 0 {
		t.Fatalf("Service %s has no port %d", svc.Name, port)
	}
	extender := r.deployment(t, "extender")
	if len(r.podsSelected(svc.Namespace, metav1.LabelSelector{MatchLabels: svc.Spec.Selector})) != 1 ||
		!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(extender.Spec.Template.Labels)) {
		t.Errorf("Service %s does not select the extender's pods, and only them", svc.Name)
	}
	target, ok := containerPort(extender.Spec.Template.Spec, svc.Spec.Ports[j].TargetPort)
	if !ok {
		t.Fatalf("Service %s's targetPort %s is no port of the extender's container", svc.Name, svc.Spec.Ports[j].TargetPort.String())
	}
	if listen := flagValue(extender.Spec.Template.Spec.Containers[0].Args, "-listen"); listen != ":"+strconv.Itoa(int(target)) {
		t.Errorf("the extender listens on %q, its container port is %d", listen, target)
	}
}

// The scheduler calls the extender over HTTPS and checks its certificate against a CA file
// it mounts from the extender's Secret (that file only, never the key); the extender serves
// that Secret's key pair. The base never asks for plain HTTP on the port that decides.
func TestKustomize_SchedulerCallsTheExtenderOverTLS(t *testing.T) {
	r := render(t, baseDir)
	conf := decodeSchedulerConfig(t, []byte(r.configMap(t, "slotplane-slot-scheduler-config").Data["config.yaml"]))
	if len(conf.Extenders) != 1 {
		t.Fatalf("want one extender, have %d", len(conf.Extenders))
	}
	ext := conf.Extenders[0]
	if !strings.HasPrefix(ext.URLPrefix, "https://") || !ext.EnableHTTPS || ext.TLSConfig == nil || ext.TLSConfig.Insecure || ext.TLSConfig.CAFile == "" {
		t.Fatalf("the scheduler does not call the extender over verified HTTPS: urlPrefix %s, enableHTTPS %v, tlsConfig %+v", ext.URLPrefix, ext.EnableHTTPS, ext.TLSConfig)
	}

	// secretFile finds the Secret and key behind a file path of a pod's first container.
	secretFile := func(spec corev1.PodSpec, file string) (secret, key string, ok bool) {
		for _, m := range spec.Containers[0].VolumeMounts {
			rel, found := strings.CutPrefix(file, m.MountPath+"/")
			if !found {
				continue
			}
			vi := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
			if vi < 0 || spec.Volumes[vi].Secret == nil {
				return "", "", false
			}
			v := spec.Volumes[vi].Secret
			if len(v.Items) == 0 {
				return v.SecretName, rel, true
			}
			for _, it := range v.Items {
				if it.Path == rel {
					return v.SecretName, it.Key, true
				}
			}
		}
		return "", "", false
	}
	sched := r.deployment(t, "slot-scheduler").Spec.Template.Spec
	caSecret, caKey, ok := secretFile(sched, ext.TLSConfig.CAFile)
	if !ok || caKey != "ca.crt" {
		t.Fatalf("the scheduler's caFile %s is not ca.crt of a mounted Secret (%s %s)", ext.TLSConfig.CAFile, caSecret, caKey)
	}
	for _, v := range sched.Volumes {
		if v.Secret != nil && v.Secret.SecretName == caSecret && (len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "ca.crt") {
			t.Errorf("the scheduler mounts more of Secret %s than ca.crt: %+v", caSecret, v.Secret.Items)
		}
	}

	extender := r.deployment(t, "extender").Spec.Template.Spec
	args := extender.Containers[0].Args
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-plain-http") }) {
		t.Errorf("the extender is asked for plain HTTP: %v", args)
	}
	for flag, wantKey := range map[string]string{"-tls-cert-file": "tls.crt", "-tls-key-file": "tls.key"} {
		file := flagValue(args, flag)
		secret, key, ok := secretFile(extender, file)
		if !ok || secret != caSecret || key != wantKey {
			t.Errorf("the extender's %s=%s is not %s of Secret %s (found %s %s)", flag, file, wantKey, caSecret, secret, key)
		}
	}
}

// The render's CRDs are slotplane's own, as generated; the operators' subsets stay out.
func TestKustomize_CRDsAreSlotplanesOwnAsGenerated(t *testing.T) {
	r := render(t, baseDir)
	want := map[string]apiextensionsv1.CustomResourceDefinitionSpec{}
	for _, data := range crds.Slotplane() {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatal(err)
		}
		want[crd.Name] = crd.Spec
	}
	have := map[string]apiextensionsv1.CustomResourceDefinitionSpec{}
	for _, crd := range r.crds {
		have[crd.Name] = crd.Spec
	}
	// A CRD added to crds/manifests must be listed in crds/kustomization.yaml too; the
	// Spark and Flink subsets must never replace the operators' own CRDs.
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("the render's CRDs differ from crds.Slotplane() (-want +have):\n%s", diff)
	}
}

// The slot-scheduler runs kube-scheduler-config.yaml changed only as a second scheduler needs:
// no default profile, the in-cluster client, and a lease of its own that its Role covers.
func TestKustomize_SlotSchedulerIsTheLocalConfigurationAsASecondScheduler(t *testing.T) {
	r := render(t, baseDir)
	cm := r.configMap(t, "slotplane-slot-scheduler-config")
	inCluster := decodeSchedulerConfig(t, []byte(cm.Data["config.yaml"]))
	want := decodeSchedulerConfig(t, deploy.SchedulerConfig)
	want.ClientConnection.Kubeconfig = ""
	want.Profiles = slices.DeleteFunc(want.Profiles, func(p schedulerv1.KubeSchedulerProfile) bool {
		return *p.SchedulerName == "default-scheduler"
	})
	want.LeaderElection = inCluster.LeaderElection // checked below
	if diff := cmp.Diff(want, inCluster); diff != "" {
		t.Errorf("kube-scheduler-config-incluster.yaml drifted from kube-scheduler-config.yaml (-want +have):\n%s", diff)
	}
	if len(inCluster.Profiles) != 1 || *inCluster.Profiles[0].SchedulerName != v1alpha1.SlotSchedulerName {
		t.Errorf("the in-cluster scheduler must serve only %s", v1alpha1.SlotSchedulerName)
	}

	sched := r.deployment(t, "slot-scheduler")
	le := inCluster.LeaderElection
	switch {
	case le.LeaderElect == nil || !*le.LeaderElect:
		t.Errorf("leader election is off")
	case le.ResourceLock != "leases":
		t.Errorf("leader election lock %q, want leases", le.ResourceLock)
	case le.ResourceName == "" || le.ResourceName == "kube-scheduler":
		t.Errorf("lease name %q: the cluster scheduler's own, or empty (which defaults to it)", le.ResourceName)
	case le.ResourceNamespace != sched.Namespace:
		t.Errorf("lease namespace %q, the scheduler runs in %q", le.ResourceNamespace, sched.Namespace)
	}
	// The Role bound to the scheduler's ServiceAccount covers its lease, and no other.
	checkLeaseGrants(t, "the slot-scheduler", r.grants(le.ResourceNamespace, sched.Spec.Template.Spec.ServiceAccountName, "coordination.k8s.io", "leases"), le.ResourceName)

	// It reads the generated ConfigMap through its --config flag.
	spec := sched.Spec.Template.Spec
	c := spec.Containers[0]
	config := flagValue(c.Command, "--config")
	vi := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == cm.Name })
	if vi < 0 {
		t.Fatalf("the scheduler mounts no volume of ConfigMap %s", cm.Name)
	}
	mi := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == spec.Volumes[vi].Name })
	if mi < 0 || config != path.Join(c.VolumeMounts[mi].MountPath, "config.yaml") {
		t.Errorf("--config=%s is not the mounted ConfigMap's config.yaml", config)
	}
	if d := flagValue(c.Command, "--pod-max-in-unschedulable-pods-duration"); d == "" {
		t.Errorf("--pod-max-in-unschedulable-pods-duration is not lowered")
	}
	// The image is the Kubernetes release the local platform builds and tests.
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUBE_VERSION := (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("no KUBE_VERSION in the Makefile")
	}
	if wantImage := "registry.k8s.io/kube-scheduler:" + string(m[1]); c.Image != wantImage {
		t.Errorf("scheduler image %s, want %s (the Makefile's KUBE_VERSION)", c.Image, wantImage)
	}
}

// The worker, the bridge and the API find Temporal through the ConfigMap and the optional TLS
// and API key Secrets; the extender needs none of them. Each runs its subcommand.
func TestKustomize_ComponentsRunTheirSubcommandsWithTemporal(t *testing.T) {
	r := render(t, baseDir)
	temporal := r.configMap(t, "slotplane-temporal")
	for _, key := range []string{"SLOTPLANE_TEMPORAL_ADDRESS", "SLOTPLANE_TEMPORAL_NAMESPACE"} {
		if temporal.Data[key] == "" {
			t.Errorf("ConfigMap %s: %s is empty", temporal.Name, key)
		}
	}
	for key, v := range temporal.Data {
		// An empty TLS or API key variable leaves it off; a set one would need the Secret.
		if (strings.HasPrefix(key, "SLOTPLANE_TEMPORAL_TLS_") || key == "SLOTPLANE_TEMPORAL_API_KEY_FILE") && v != "" {
			t.Errorf("the base turns Temporal TLS or an API key on (%s=%s): it is for overlays", key, v)
		}
	}
	// The installation's names are there for an overlay to change, at the binary's defaults.
	for key, want := range map[string]string{"SLOTPLANE_TASK_QUEUE": installation.DefaultTaskQueue, "SLOTPLANE_WORKFLOW_ID_PREFIX": "", "SLOTPLANE_TEMPORAL_API_KEY_FILE": ""} {
		if v, ok := temporal.Data[key]; !ok || v != want {
			t.Errorf("ConfigMap %s: %s is %q (set: %v), want %q", temporal.Name, key, v, ok, want)
		}
	}
	// Each optional Secret of Temporal's, and where it is mounted.
	temporalSecrets := map[string]string{"slotplane-temporal-tls": "/etc/slotplane/temporal-tls", "slotplane-temporal-api-key": "/etc/slotplane/temporal-api-key"}
	for _, tc := range []struct {
		component  string
		subcommand string // "": the component's name
		temporal   bool
		extraFlags []string
	}{
		{component: "worker", temporal: true, extraFlags: []string{"-task-queues=" + installation.Default.Queue()}},
		{component: "admission", subcommand: "worker", temporal: true, extraFlags: []string{"-task-queues=" + installation.Default.AdmissionQueue()}},
		{component: "bridge", temporal: true},
		{component: "api", temporal: true, extraFlags: []string{"-auth=kubernetes"}},
		{component: "extender"},
	} {
		d := r.deployment(t, tc.component)
		spec := d.Spec.Template.Spec
		c := spec.Containers[0]
		subcommand := tc.subcommand
		if subcommand == "" {
			subcommand = tc.component
		}
		args := r.expandedArgs(c)
		if len(args) == 0 || args[0] != subcommand {
			t.Errorf("%s: args %v do not start with the subcommand", d.Name, args)
		}
		for _, f := range tc.extraFlags {
			if !slices.Contains(args, f) {
				t.Errorf("%s: args %v lack %s", d.Name, args, f)
			}
		}
		usesConfigMap := slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool {
			return e.ConfigMapRef != nil && e.ConfigMapRef.Name == temporal.Name
		})
		if usesConfigMap != tc.temporal {
			t.Errorf("%s: reads ConfigMap %s: %v, want %v", d.Name, temporal.Name, usesConfigMap, tc.temporal)
		}
		for secret, dir := range temporalSecrets {
			vi := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret })
			if (vi >= 0) != tc.temporal {
				t.Errorf("%s: mounts Secret %s: %v, want %v", d.Name, secret, vi >= 0, tc.temporal)
			}
			if vi < 0 {
				continue
			}
			if v := spec.Volumes[vi]; v.Secret.Optional == nil || !*v.Secret.Optional {
				t.Errorf("%s: Secret %s must be optional, or the pod waits for it", d.Name, secret)
			}
			// A directory, not a subPath: a rotated key or certificate reaches the pod.
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == spec.Volumes[vi].Name && m.MountPath == dir && m.ReadOnly && m.SubPath == ""
			}) {
				t.Errorf("%s: Secret %s is not mounted read-only at %s", d.Name, secret, dir)
			}
		}
	}
}

// Overlays give the installation another task queue in the ConfigMap alone: the workers then
// poll it and its Admission queue, as the bridge and the API that read the same ConfigMap
// start their workflows there.
func TestKustomize_WorkersPollTheConfigMapsTaskQueue(t *testing.T) {
	base := render(t, baseDir)
	overlay := renderOverlay(t, func(string) string {
		return `configMapGenerator:
- name: slotplane-temporal
  behavior: merge
  literals:
  - SLOTPLANE_TASK_QUEUE=eu-1
  - SLOTPLANE_WORKFLOW_ID_PREFIX=eu-1/
`
	})
	for name, r := range map[string]*rendered{"base": base, "overlay": overlay} {
		for component, queue := range map[string]func(installation.Names) string{
			"worker":    installation.Names.Queue,
			"admission": installation.Names.AdmissionQueue,
		} {
			c := r.deployment(t, component).Spec.Template.Spec.Containers[0]
			env := r.containerEnv(c)
			ids := installation.Names{TaskQueue: env["SLOTPLANE_TASK_QUEUE"], IDPrefix: env["SLOTPLANE_WORKFLOW_ID_PREFIX"]}
			if got, want := flagValue(r.expandedArgs(c), "-task-queues"), queue(ids); got != want {
				t.Errorf("%s: the %s polls %q, want %q, its installation's (%+v)", name, component, got, want, ids)
			}
		}
	}
	if got := overlay.configMap(t, "slotplane-temporal").Data["SLOTPLANE_TASK_QUEUE"]; got != "eu-1" {
		t.Fatalf("the overlay's task queue is %q after the merge", got)
	}
}

// Every component but the slot-scheduler's kube-scheduler is slotplane's binary, and every
// one of its containers logs JSON lines.
func TestKustomize_EverySlotplaneContainerLogsJSON(t *testing.T) {
	r := render(t, baseDir)
	for _, component := range slotplaneComponents {
		for _, c := range r.deployment(t, component).Spec.Template.Spec.Containers {
			if got := r.containerEnv(c)["SLOTPLANE_LOG_FORMAT"]; got != "json" {
				t.Errorf("%s/%s: SLOTPLANE_LOG_FORMAT is %q, want json", component, c.Name, got)
			}
			if f := flagValue(c.Args, "-log-format"); f != "" {
				t.Errorf("%s/%s: -log-format=%s in its args overrides the ConfigMap", component, c.Name, f)
			}
		}
	}
}

// Each probe asks the path the binary serves for it, on the port the flag names: /healthz
// for liveness (and startup), /readyz for readiness, on the plain-HTTP health port; the API
// answers both under /api/v1 on its own port. The extender's readiness (the replica that
// decides) is probed every second, so the Service follows a takeover within a second or two.
func TestKustomize_ProbesAskWhatTheBinaryServes(t *testing.T) {
	r := render(t, baseDir)
	type probe struct{ path, portFlag string }
	for component, want := range map[string]struct {
		liveness, readiness probe
		readinessPeriod     int32 // 0: any
	}{
		"worker":    {liveness: probe{"/healthz", "-health-listen"}, readiness: probe{"/readyz", "-health-listen"}},
		"admission": {liveness: probe{"/healthz", "-health-listen"}, readiness: probe{"/readyz", "-health-listen"}},
		"bridge":    {liveness: probe{"/healthz", "-health-listen"}, readiness: probe{"/readyz", "-health-listen"}},
		"extender":  {liveness: probe{"/healthz", "-health-listen"}, readiness: probe{"/readyz", "-health-listen"}, readinessPeriod: 1},
		"api":       {liveness: probe{"/api/v1/healthz", "-listen"}, readiness: probe{"/api/v1/readyz", "-listen"}},
	} {
		d := r.deployment(t, component)
		spec := d.Spec.Template.Spec
		c := spec.Containers[0]
		args := r.expandedArgs(c)
		check := func(kind string, p *corev1.Probe, want probe) {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s probe", component, kind)
				return
			}
			listen := flagValue(args, want.portFlag)
			port, ok := containerPort(spec, p.HTTPGet.Port)
			switch {
			case listen == "":
				t.Errorf("%s: args %v do not set %s: the probes' port would be the binary's default, unchecked", component, args, want.portFlag)
			case p.HTTPGet.Path != want.path || !ok || ":"+strconv.Itoa(int(port)) != listen:
				t.Errorf("%s: %s probe asks %s on port %s, want %s on %s (%s)", component, kind, p.HTTPGet.Path, p.HTTPGet.Port.String(), want.path, listen, want.portFlag)
			case p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP:
				t.Errorf("%s: %s probe over %s; %s serves plain HTTP", component, kind, p.HTTPGet.Scheme, want.portFlag)
			}
		}
		check("liveness", c.LivenessProbe, want.liveness)
		check("readiness", c.ReadinessProbe, want.readiness)
		if c.StartupProbe != nil {
			check("startup", c.StartupProbe, want.liveness)
		}
		if want.readinessPeriod != 0 && c.ReadinessProbe != nil && c.ReadinessProbe.PeriodSeconds != want.readinessPeriod {
			t.Errorf("%s: readiness probed every %d s, want %d", component, c.ReadinessProbe.PeriodSeconds, want.readinessPeriod)
		}
	}
}

// Every component runs two replicas or more, each preferring a node apart from the others of
// its component: preferred, so that a one-node cluster still runs them all.
func TestKustomize_ReplicasPreferDifferentNodes(t *testing.T) {
	r := render(t, baseDir)
	for _, d := range r.deployments {
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("Deployment %s runs %v replicas, want 2 or more", d.Name, d.Spec.Replicas)
		}
		aff := d.Spec.Template.Spec.Affinity
		if aff == nil || aff.PodAntiAffinity == nil {
			t.Errorf("Deployment %s has no pod anti-affinity", d.Name)
			continue
		}
		if len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			t.Errorf("Deployment %s requires its replicas apart: a one-node cluster would leave one pending", d.Name)
		}
		apart := slices.ContainsFunc(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, func(w corev1.WeightedPodAffinityTerm) bool {
			term := w.PodAffinityTerm
			if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || len(term.Namespaces) > 0 || term.NamespaceSelector != nil {
				return false
			}
			got := r.podsSelected(d.Namespace, *term.LabelSelector)
			return len(got) == 1 && got[0].Name == d.Name
		})
		if !apart {
			t.Errorf("Deployment %s: no preferred anti-affinity on %s that selects exactly its own pods: %+v", d.Name, corev1.LabelHostname, aff.PodAntiAffinity)
		}
	}
}

// A drain or a cluster upgrade evicts one replica of a component at a time, and never waits
// on a replica that is not ready. The extender has no budget: its standby is never ready, so
// one would refuse every eviction of the active replica.
func TestKustomize_DisruptionBudgetsLetOneReplicaGoAtATime(t *testing.T) {
	r := render(t, baseDir)
	for _, d := range r.deployments {
		component := d.Spec.Template.Labels["app.kubernetes.io/component"]
		var budgets []policyv1.PodDisruptionBudget
		for _, b := range r.disruptionBudgets {
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil {
				t.Errorf("PodDisruptionBudget %s: %v", b.Name, err)
				continue
			}
			if b.Namespace == d.Namespace && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				budgets = append(budgets, b)
			}
		}
		if component == "extender" {
			if len(budgets) > 0 {
				t.Errorf("a PodDisruptionBudget covers the extender, whose standby is never ready: a drain of the active one's node would hang")
			}
			continue
		}
		if len(budgets) != 1 {
			t.Errorf("Deployment %s: %d PodDisruptionBudgets, want 1", d.Name, len(budgets))
			continue
		}
		b := budgets[0]
		if got := r.podsSelected(d.Namespace, *b.Spec.Selector); len(got) != 1 || got[0].Name != d.Name {
			t.Errorf("PodDisruptionBudget %s selects the pods of more than %s", b.Name, d.Name)
		}
		if b.Spec.MinAvailable != nil || b.Spec.MaxUnavailable == nil || *b.Spec.MaxUnavailable != intstr.FromInt32(1) {
			t.Errorf("PodDisruptionBudget %s: minAvailable %v, maxUnavailable %v; want maxUnavailable 1", b.Name, b.Spec.MinAvailable, b.Spec.MaxUnavailable)
		}
		if p := b.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
			t.Errorf("PodDisruptionBudget %s: unhealthyPodEvictionPolicy %v, want AlwaysAllow", b.Name, p)
		}
	}
	for _, b := range r.disruptionBudgets {
		if len(r.podsSelected(b.Namespace, *b.Spec.Selector)) == 0 {
			t.Errorf("PodDisruptionBudget %s selects no pod of the render", b.Name)
		}
	}
}

// The extender and the bridge campaign for a Lease of their own in their namespace, and
// their Role grants exactly that: create (which names no object), get and update of their
// Lease alone; the bridge's lock also records Events.
func TestKustomize_ExtenderAndBridgeElectOneThroughTheirOwnLease(t *testing.T) {
	r := render(t, baseDir)
	for _, component := range []string{"extender", "bridge"} {
		d := r.deployment(t, component)
		c := d.Spec.Template.Spec.Containers[0]
		args := r.expandedArgs(c)
		if !slices.Contains(args, "-leader-elect") && flagValue(args, "-leader-elect") != "true" {
			t.Errorf("%s: args %v lack -leader-elect", component, args)
		}
		lease := flagValue(args, "-lease-name")
		if lease == "" {
			t.Errorf("%s: args %v name no -lease-name", component, args)
			continue
		}
		if ns := flagValue(args, "-lease-namespace"); ns != "" && ns != d.Namespace {
			t.Errorf("%s: its Lease is in %s, the pod in %s", component, ns, d.Namespace)
		}
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
		}) {
			t.Errorf("%s: POD_NAMESPACE is not the pod's namespace from the downward API", component)
		}
		grants := r.grants(d.Namespace, d.Spec.Template.Spec.ServiceAccountName, "coordination.k8s.io", "leases")
		checkLeaseGrants(t, component, grants, lease)
		events := r.grants(d.Namespace, d.Spec.Template.Spec.ServiceAccountName, "", "events")
		for _, v := range []string{"create", "patch"} {
			if _, ok := events[v]; (component == "bridge") != ok {
				t.Errorf("%s: %s on Events in %s granted: %v, want %v", component, v, d.Namespace, ok, !ok)
			}
		}
	}
}

// checkLeaseGrants fails unless grants give create on Leases and get and update on exactly
// the Lease name, and nothing else on Leases.
func checkLeaseGrants(t *testing.T, who string, grants map[string][]string, name string) {
	t.Helper()
	if names, ok := grants["create"]; !ok || names != nil {
		t.Errorf("%s: create on Leases: granted %v on %v; want granted, a create names no Lease yet", who, ok, names)
	}
	for _, v := range []string{"get", "update"} {
		if names, ok := grants[v]; !ok || !slices.Equal(names, []string{name}) {
			t.Errorf("%s: %s on Leases: granted %v on %v (nil: all); want on %s alone", who, v, ok, names, name)
		}
	}
	for v := range grants {
		if !slices.Contains([]string{"create", "get", "update"}, v) {
			t.Errorf("%s: %s on Leases, which leader election does not use", who, v)
		}
	}
}

// A rollout of the extender does not wait for a new replica to be ready: a standby never is
// while the active one lives, so a rollout that kept one old replica available would never
// end. The Lease, not the strategy, keeps two from deciding at once.
func TestKustomize_ExtenderRollsWithoutWaitingForAStandby(t *testing.T) {
	r := render(t, baseDir)
	d := r.deployment(t, "extender")
	s := d.Spec.Strategy
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil || s.RollingUpdate.MaxUnavailable == nil {
		t.Fatalf("the extender rolls by %+v, want RollingUpdate with maxUnavailable", s)
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxUnavailable, int(*d.Spec.Replicas), false)
	if err != nil || unavailable < int(*d.Spec.Replicas) {
		t.Errorf("maxUnavailable %s keeps %d old replicas available until new ones are ready: the rollout would wait forever", s.RollingUpdate.MaxUnavailable.String(), int(*d.Spec.Replicas)-unavailable)
	}
}

// The API's Service keeps a client on one replica, so a change feed client that reconnects
// resumes against the process that numbered its events.
func TestKustomize_APIServiceKeepsAClientOnOneReplica(t *testing.T) {
	r := render(t, baseDir)
	api := r.deployment(t, "api")
	found := false
	for _, svc := range r.services {
		if svc.Namespace != api.Namespace || len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(api.Spec.Template.Labels)) {
			continue
		}
		found = true
		if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
			t.Errorf("Service %s: sessionAffinity %q, want ClientIP", svc.Name, svc.Spec.SessionAffinity)
		}
	}
	if !found {
		t.Errorf("no Service selects the API")
	}
}

// grants is what the render's roles bound to a ServiceAccount allow on a resource in a
// namespace: for each verb, the names it is limited to, or nil when it covers every object.
func (r *rendered) grants(namespace, serviceAccount, group, resource string) map[string][]string {
	bound := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == namespace
		})
	}
	var rules []rbacv1.PolicyRule
	clusterRole := func(name string) {
		for _, c := range r.clusterRoles {
			if c.Name == name {
				rules = append(rules, c.Rules...)
			}
		}
	}
	for _, b := range r.clusterRoleBindings {
		if bound(b.Subjects) {
			clusterRole(b.RoleRef.Name)
		}
	}
	for _, b := range r.roleBindings {
		if b.Namespace != namespace || !bound(b.Subjects) {
			continue
		}
		if b.RoleRef.Kind == "ClusterRole" {
			clusterRole(b.RoleRef.Name)
			continue
		}
		for _, ro := range r.roles {
			if ro.Name == b.RoleRef.Name && ro.Namespace == b.Namespace {
				rules = append(rules, ro.Rules...)
			}
		}
	}
	out := map[string][]string{}
	for _, rule := range rules {
		if !slices.Contains(rule.APIGroups, group) || !slices.Contains(rule.Resources, resource) {
			continue
		}
		for _, v := range rule.Verbs {
			names, seen := out[v]
			switch {
			case len(rule.ResourceNames) == 0:
				out[v] = nil
			case !seen || names != nil:
				out[v] = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(names), rule.ResourceNames...))))
			}
		}
	}
	return out
}

// containerEnv is a container's environment as the kubelet makes it from the render: the
// ConfigMaps of envFrom, then env's literal values over them (a value from elsewhere, such
// as the downward API, is left out).
func (r *rendered) containerEnv(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		for _, cm := range r.configMaps {
			if cm.Name == from.ConfigMapRef.Name {
				for k, v := range cm.Data {
					env[from.Prefix+k] = v
				}
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		} else {
			delete(env, e.Name)
		}
	}
	return env
}

// envReference is a $(NAME) in a container's args, which the kubelet replaces with the
// variable's value.
var envReference = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandedArgs are a container's args as the process gets them: each $(NAME) of a variable
// of its environment replaced by the value, others left as they are (as the kubelet does).
func (r *rendered) expandedArgs(c corev1.Container) []string {
	env := r.containerEnv(c)
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = envReference.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
	}
	return out
}

// Ingress is denied by default; the API is open to all on its port, the extender only to the
// slot-scheduler's pods; every policy selects pods the render runs.
func TestKustomize_NetworkPoliciesSelectExistingPods(t *testing.T) {
	r := render(t, baseDir)
	denyAll := false
	for _, np := range r.networkPolicies {
		if len(np.Spec.PodSelector.MatchLabels) == 0 && len(np.Spec.PodSelector.MatchExpressions) == 0 {
			if len(np.Spec.Ingress) == 0 && slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				denyAll = true
			} else {
				t.Errorf("NetworkPolicy %s selects every pod and lets something in", np.Name)
			}
			continue
		}
		selected := r.podsSelected(np.Namespace, np.Spec.PodSelector)
		if len(selected) == 0 {
			t.Errorf("NetworkPolicy %s selects no pod of the render", np.Name)
			continue
		}
		for _, rule := range np.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.PodSelector != nil && peer.NamespaceSelector == nil && len(r.podsSelected(np.Namespace, *peer.PodSelector)) == 0 {
					t.Errorf("NetworkPolicy %s lets in pods that the render does not run", np.Name)
				}
			}
			for _, p := range rule.Ports {
				for _, d := range selected {
					if _, ok := containerPort(d.Spec.Template.Spec, *p.Port); !ok {
						t.Errorf("NetworkPolicy %s opens port %s, which %s does not serve", np.Name, p.Port.String(), d.Name)
					}
				}
			}
		}
	}
	if !denyAll {
		t.Errorf("no NetworkPolicy denies all ingress by default")
	}

	// What may reach a component: every peer of every rule of the policies that select it,
	// with the ports; an empty peer list is everyone.
	ingress := func(component string) []networkingv1.NetworkPolicyIngressRule {
		d := r.deployment(t, component)
		var out []networkingv1.NetworkPolicyIngressRule
		for _, np := range r.networkPolicies {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err == nil && np.Namespace == d.Namespace && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				out = append(out, np.Spec.Ingress...)
			}
		}
		return out
	}
	if !slices.ContainsFunc(ingress("api"), func(rule networkingv1.NetworkPolicyIngressRule) bool {
		return len(rule.From) == 0 && slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port.IntValue() == 8088 })
	}) {
		t.Errorf("the API's port 8088 is not open to everyone")
	}
	scheduler := r.deployment(t, "slot-scheduler")
	rules := ingress("extender")
	if len(rules) == 0 {
		t.Errorf("nothing may reach the extender")
	}
	metricsOnly := func(rule networkingv1.NetworkPolicyIngressRule) bool {
		return len(rule.Ports) > 0 && !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port.IntValue() != metricsPort })
	}
	for _, rule := range rules {
		if len(rule.From) == 0 {
			t.Errorf("the extender is open to everyone: %+v", rule)
		}
		if metricsOnly(rule) {
			continue // checked with every component's below
		}
		for _, peer := range rule.From {
			if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
				t.Errorf("the extender lets in more than the slot-scheduler's pods: %+v", peer)
				continue
			}
			got := r.podsSelected(scheduler.Namespace, *peer.PodSelector)
			if len(got) != 1 || got[0].Name != scheduler.Name {
				t.Errorf("the extender lets in pods other than the slot-scheduler's: %+v", peer)
			}
		}
	}
}

// The workers, which run the workflows, roll by stopping the old build first: two builds
// never replay the same runs (docs/operations.md, "Upgrades"). The others roll as usual.
func TestKustomize_WorkersRollOneBuildAtATime(t *testing.T) {
	r := render(t, baseDir)
	for _, component := range []string{"worker", "admission"} {
		d := r.deployment(t, component)
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("the %s Deployment rolls by %q, want Recreate", component, d.Spec.Strategy.Type)
		}
	}
}

// Every component serves its metrics on port 8080, says so to annotation-based discovery, and
// lets in only a Prometheus in a namespace labelled slotplane.io/metrics=allowed there.
func TestKustomize_EveryComponentCanBeScraped(t *testing.T) {
	r := render(t, baseDir)
	for _, component := range slotplaneComponents {
		d := r.deployment(t, component)
		ann := d.Spec.Template.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(metricsPort) || ann["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s's pods carry no scrape annotations for port %d: %v", component, metricsPort, ann)
		}
		if _, ok := containerPort(d.Spec.Template.Spec, intstr.FromInt(metricsPort)); !ok {
			t.Errorf("%s serves no port %d", component, metricsPort)
		}
		if !slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return a == "-metrics-listen=:"+strconv.Itoa(metricsPort) }) {
			t.Errorf("%s is not told to serve its metrics on :%d: %v", component, metricsPort, d.Spec.Template.Spec.Containers[0].Args)
		}
		open := false
		for _, np := range r.networkPolicies {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil || np.Namespace != d.Namespace || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				continue
			}
			for _, rule := range np.Spec.Ingress {
				if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port.IntValue() == metricsPort }) {
					continue
				}
				for _, peer := range rule.From {
					if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["slotplane.io/metrics"] == "allowed" && peer.PodSelector == nil {
						open = true
					} else {
						t.Errorf("%s's metrics port lets in more than the metrics namespaces: %+v", component, peer)
					}
				}
				if len(rule.From) == 0 {
					t.Errorf("%s's metrics port is open to everyone", component)
				}
			}
		}
		if !open {
			t.Errorf("no NetworkPolicy lets Prometheus reach %s's metrics", component)
		}
	}
}

// metricsPort is where every component serves /metrics in deploy/.
const metricsPort = 8080

// slotplaneComponents are the Deployments that run slotplane's own image.
var slotplaneComponents = []string{"worker", "admission", "extender", "bridge", "api"}

// madeImage is the image `make image` builds: the Makefile's IMAGE and VERSION.
func madeImage(t testing.TB) (name, tag string) {
	t.Helper()
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	n := regexp.MustCompile(`(?m)^IMAGE := (\S+)$`).FindSubmatch(makefile)
	v := regexp.MustCompile(`(?m)^VERSION := (\S+)$`).FindSubmatch(makefile)
	if n == nil || v == nil {
		t.Fatal("no IMAGE or VERSION in the Makefile")
	}
	return string(n[1]), string(v[1])
}

// The components run the image make image builds. Their own files name it only
// "slotplane", so the base's images entry is the one place that says which; an overlay
// pins what it pushed by digest, as make image prints it, and leaves the scheduler alone.
func TestKustomize_ComponentsRunTheImageMakeImageBuilds(t *testing.T) {
	name, tag := madeImage(t)
	r := render(t, baseDir)
	for _, component := range slotplaneComponents {
		for _, c := range r.deployment(t, component).Spec.Template.Spec.Containers {
			if c.Image != name+":"+tag {
				t.Errorf("%s/%s runs %s, want %s:%s (the Makefile's IMAGE and VERSION)", component, c.Name, c.Image, name, tag)
			}
		}
	}
	imageLine := regexp.MustCompile(`(?m)^\s*-?\s*image:\s*(\S+)\s*$`)
	for _, component := range slotplaneComponents {
		data, err := os.ReadFile(component + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		lines := imageLine.FindAllSubmatch(data, -1)
		if len(lines) == 0 {
			t.Errorf("%s.yaml names no image", component)
		}
		for _, m := range lines {
			if string(m[1]) != "slotplane" {
				t.Errorf("%s.yaml names image %s: name it slotplane, for the images entry to set", component, m[1])
			}
		}
	}

	digest := "sha256:" + strings.Repeat("0f", 32)
	overlay := renderOverlay(t, func(string) string {
		return `images:
- name: ` + name + `
  newName: registry.example.com/slotplane
  digest: ` + digest + `
`
	})
	for _, d := range overlay.deployments {
		img := d.Spec.Template.Spec.Containers[0].Image
		isSlotplane := slices.Contains(slotplaneComponents, d.Spec.Template.Labels["app.kubernetes.io/component"])
		switch {
		case isSlotplane && img != "registry.example.com/slotplane@"+digest:
			t.Errorf("%s runs %s, not the overlay's image by digest", d.Name, img)
		case !isSlotplane && !strings.HasPrefix(img, "registry.k8s.io/kube-scheduler:"):
			t.Errorf("%s runs %s: the overlay's entry reached it", d.Name, img)
		}
	}
}

// renderOverlay renders an overlay of the base: its resources line, then the rest of its
// kustomization, which rest writes given the base's path relative to the overlay.
func renderOverlay(t testing.TB, rest func(base string) string) *rendered {
	t.Helper()
	base, err := filepath.Abs(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n- "+rel+"\n"+rest(rel)), 0o600); err != nil {
		t.Fatal(err)
	}
	return render(t, dir)
}

// An overlay as docs/operations.md shows it: another image tag, another Temporal address, and the API
// on a token file from a Secret (components/api-tokens).
func TestKustomize_OverlaySetsImageTemporalAndTokenFile(t *testing.T) {
	r := renderOverlay(t, func(base string) string {
		return `components:
- ` + filepath.Join(base, "components", "api-tokens") + `
images:
- name: ghcr.io/slotplane/slotplane
  newTag: v9.9.9
configMapGenerator:
- name: slotplane-temporal
  behavior: merge
  literals:
  - SLOTPLANE_TEMPORAL_ADDRESS=temporal.example.com:7233
secretGenerator:
- name: slotplane-api-tokens
  namespace: slotplane-system
  literals:
  - tokens.csv=s3cret,alice,admins
`
	})
	for _, d := range r.deployments {
		if img := d.Spec.Template.Spec.Containers[0].Image; strings.HasPrefix(img, "ghcr.io/slotplane/") && img != "ghcr.io/slotplane/slotplane:v9.9.9" {
			t.Errorf("%s runs %s, not the overlay's tag", d.Name, img)
		}
	}
	if got := r.configMap(t, "slotplane-temporal").Data["SLOTPLANE_TEMPORAL_ADDRESS"]; got != "temporal.example.com:7233" {
		t.Errorf("Temporal address %q after the merge", got)
	}
	api := r.deployment(t, "api")
	spec := api.Spec.Template.Spec
	args := spec.Containers[0].Args
	tokenFile := flagValue(args, "-token-file")
	if flagValue(args, "-auth") != "tokens" || tokenFile == "" {
		t.Fatalf("api args %v: want -auth=tokens and a -token-file", args)
	}
	if len(r.secrets) != 1 {
		t.Fatalf("%d Secrets, want the overlay's token Secret", len(r.secrets))
	}
	vi := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == r.secrets[0].Name })
	if vi < 0 {
		t.Fatalf("the API does not mount Secret %s", r.secrets[0].Name)
	}
	if _, ok := r.secrets[0].Data[path.Base(tokenFile)]; !ok {
		t.Errorf("Secret %s has no key %s", r.secrets[0].Name, path.Base(tokenFile))
	}
	if !slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == spec.Volumes[vi].Name && m.MountPath == path.Dir(tokenFile)
	}) {
		t.Errorf("-token-file=%s is not in the mounted Secret", tokenFile)
	}
	for _, b := range r.clusterRoleBindings {
		if b.RoleRef.Name == "system:auth-delegator" {
			t.Errorf("ClusterRoleBinding %s: the token file needs no reviews", b.Name)
		}
	}
}

func decodeSchedulerConfig(t testing.TB, data []byte) schedulerv1.KubeSchedulerConfiguration {
	t.Helper()
	var conf schedulerv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(data, &conf); err != nil {
		t.Fatalf("scheduler configuration does not decode strictly: %v", err)
	}
	return conf
}

// flagValue is the value of -name=value (or --name=value) in args, "" if absent.
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// The base carries the admission policies the local platform installs, unchanged, and each
// policy is bound to deny.
func TestKustomize_AdmissionPoliciesAreTheLocalOnes(t *testing.T) {
	r := render(t, baseDir)
	var local []admissionv1.ValidatingAdmissionPolicy
	for _, doc := range strings.Split(string(deploy.AdmissionPolicies), "\n---\n") {
		var p admissionv1.ValidatingAdmissionPolicy
		if err := yaml.Unmarshal([]byte(doc), &p); err == nil && p.Kind == "ValidatingAdmissionPolicy" {
			local = append(local, p)
		}
	}
	if len(local) == 0 || len(r.admissionPolicies) != len(local) {
		t.Fatalf("%d policies in the base, %d in deploy.AdmissionPolicies", len(r.admissionPolicies), len(local))
	}
	for i, p := range r.admissionPolicies {
		// kustomize sets the base's namespace on the policy (its schema does not know the
		// kind to be cluster-scoped); the API server drops it on create, as the apply test
		// shows.
		if diff := cmp.Diff(local[i].Spec, p.Spec); diff != "" {
			t.Errorf("policy %s differs from the local platform's (-local +base)\n%s", p.Name, diff)
		}
		bound := false
		for _, b := range r.policyBindings {
			if b.Spec.PolicyName == p.Name && slices.Contains(b.Spec.ValidationActions, admissionv1.Deny) {
				bound = true
			}
		}
		if !bound {
			t.Errorf("policy %s is not bound with Deny", p.Name)
		}
	}
}

// The base's spec webhook is the local platform's (bridge.SpecWebhookConfiguration) but for
// where it calls: the bridge's Service, on a port the Service serves, whose target is the
// port the bridge's webhook listens on; the bridge mounts the Secret its certificate comes
// from, and a network policy lets the API server in.
func TestKustomize_SpecWebhookIsTheLocalOneAtTheBridgesService(t *testing.T) {
	r := render(t, baseDir)
	if len(r.webhooks) != 1 || len(r.webhooks[0].Webhooks) != 1 {
		t.Fatalf("want one webhook configuration with one webhook, have %+v", r.webhooks)
	}
	got := r.webhooks[0].Webhooks[0]
	want := bridge.SpecWebhookConfiguration(admissionv1.WebhookClientConfig{}).Webhooks[0]
	ref := got.ClientConfig.Service
	got.ClientConfig = admissionv1.WebhookClientConfig{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the base's webhook differs from the local platform's (-local +base)\n%s", diff)
	}
	if r.webhooks[0].Name != bridge.SpecWebhookName || ref == nil || ref.Path == nil || *ref.Path != bridge.SpecWebhookPath || ref.Namespace != "slotplane-system" {
		t.Fatalf("the webhook calls %+v, want the bridge's Service at %s", ref, bridge.SpecWebhookPath)
	}
	var svc *corev1.Service
	for i := range r.services {
		if r.services[i].Name == ref.Name {
			svc = &r.services[i]
		}
	}
	if svc == nil {
		t.Fatalf("no Service %s", ref.Name)
	}
	bridgeDep := r.deployment(t, "bridge").Spec.Template.Spec
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(r.deployment(t, "bridge").Spec.Template.Labels)) {
		t.Errorf("Service %s does not select the bridge", svc.Name)
	}
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	served := false
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			target, ok := containerPort(bridgeDep, p.TargetPort)
			listen := flagValue(bridgeDep.Containers[0].Args, "-webhook-listen")
			served = ok && listen == ":"+strconv.Itoa(int(target))
		}
	}
	if !served {
		t.Errorf("the bridge does not listen where Service %s port %d sends the calls (args %v)", svc.Name, port, bridgeDep.Containers[0].Args)
	}
	mounted := false
	dir := flagValue(bridgeDep.Containers[0].Args, "-webhook-cert-dir")
	for _, m := range bridgeDep.Containers[0].VolumeMounts {
		for _, v := range bridgeDep.Volumes {
			if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "slotplane-bridge-webhook-tls" && m.MountPath == dir {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("the bridge does not read its webhook certificate (%s) from Secret slotplane-bridge-webhook-tls", dir)
	}
}
