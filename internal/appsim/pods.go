package appsim

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
)

// Labels the stand-in puts on its pods.
const (
	// AppLabel names the application a pod belongs to (value: <kind>.<name>); the
	// stand-in's cache sees only pods carrying it.
	AppLabel = "appsim.slotplane.io/app"
	// RoleLabel is driver / executor (Spark) or jobmanager / taskmanager (Flink).
	RoleLabel = "appsim.slotplane.io/role"
)

func appLabel(kind, name string) string { return strings.ToLower(kind) + "." + name }

// parseMemory reads the memory notation of Spark and Flink ("512m", "2g", "1024mb",
// "4096k", "2 gb", plain bytes) as bytes. Spark reads a bare number as MiB, Flink as bytes:
// bareUnit says which.
func parseMemory(s string, bareUnit int64) (int64, error) {
	v := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	units := []struct {
		suffix string
		factor int64
	}{{"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}}
	factor := bareUnit
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			v, factor = strings.TrimSuffix(v, u.suffix), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("memory %q is not a size like 512m or 2g", s)
	}
	return n * factor, nil
}

// sparkPodMemory is what Spark asks for: the heap plus the overhead (given, or a tenth of
// the heap, at least 384 MiB).
func sparkPodMemory(memory, overhead string) (int64, error) {
	if memory == "" {
		memory = "1g"
	}
	heap, err := parseMemory(memory, 1<<20)
	if err != nil {
		return 0, err
	}
	var extra int64
	if overhead != "" {
		if extra, err = parseMemory(overhead, 1<<20); err != nil {
			return 0, err
		}
	} else {
		extra = max(384<<20, heap/10)
	}
	return heap + extra, nil
}

// sparkResources are a Spark pod's container resources: cpu from coreRequest or cores,
// memory with overhead, and any other resource the template's first container asks for.
func sparkResources(p *sparkv1beta2.SparkPodSpec, coreRequest string) (corev1.ResourceRequirements, error) {
	cpu := resource.MustParse("1")
	switch {
	case coreRequest != "":
		q, err := resource.ParseQuantity(coreRequest)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("coreRequest %q: %w", coreRequest, err)
		}
		cpu = q
	case p.Cores != nil:
		cpu = *resource.NewQuantity(int64(*p.Cores), resource.DecimalSI)
	}
	mem, err := sparkPodMemory(p.Memory, p.MemoryOverhead)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	req := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI)}
	lim := corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI)}
	if p.CoreLimit != "" {
		q, err := resource.ParseQuantity(p.CoreLimit)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("coreLimit %q: %w", p.CoreLimit, err)
		}
		lim[corev1.ResourceCPU] = q
	}
	addExtra(req, lim, p.Template)
	return corev1.ResourceRequirements{Requests: req, Limits: lim}, nil
}

// addExtra copies the resources other than cpu and memory from a pod template's first
// container, as Spark and Flink keep them.
func addExtra(req, lim corev1.ResourceList, t *corev1.PodTemplateSpec) {
	if t == nil || len(t.Spec.Containers) == 0 {
		return
	}
	r := t.Spec.Containers[0].Resources
	for name, q := range r.Requests {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			req[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			lim[name] = q.DeepCopy()
		}
	}
}

// placement is what decides where a pod may go; the spec's own value wins over a template's.
type placement struct {
	schedulerName, priorityClassName string
	affinity                         *corev1.Affinity
	tolerations                      []corev1.Toleration
	nodeSelector                     map[string]string
}

func (pl placement) orTemplate(t *corev1.PodTemplateSpec) placement {
	if t == nil {
		return pl
	}
	s := t.Spec
	if pl.schedulerName == "" {
		pl.schedulerName = s.SchedulerName
	}
	if pl.priorityClassName == "" {
		pl.priorityClassName = s.PriorityClassName
	}
	if pl.affinity == nil {
		pl.affinity = s.Affinity
	}
	if pl.tolerations == nil {
		pl.tolerations = s.Tolerations
	}
	if pl.nodeSelector == nil {
		pl.nodeSelector = s.NodeSelector
	}
	return pl
}

func newPod(namespace, name, container, image string, labels, annotations map[string]string, res corev1.ResourceRequirements, pl placement, env []corev1.EnvVar, owner metav1.OwnerReference) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			SchedulerName:                 pl.schedulerName,
			PriorityClassName:             pl.priorityClassName,
			Affinity:                      pl.affinity.DeepCopy(),
			Tolerations:                   pl.tolerations,
			NodeSelector:                  pl.nodeSelector,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: container, Image: image, Resources: res, Env: env,
			}},
		},
	}
}

func merged(maps_ ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps_ {
		maps.Copy(out, m)
	}
	return out
}

// simAnnotations are the run-time annotations an application passes to its main pod.
func simAnnotations(from map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{SimDurationAnnotation, SimOutcomeAnnotation} {
		if v, ok := from[k]; ok {
			out[k] = v
		}
	}
	return out
}

func templateMeta(t *corev1.PodTemplateSpec) (labels, annotations map[string]string) {
	if t == nil {
		return nil, nil
	}
	return t.Labels, t.Annotations
}

// SparkDriverPod is the driver pod spark-submit makes for an application.
func SparkDriverPod(app *sparkv1beta2.SparkApplication) (*corev1.Pod, error) {
	d := &app.Spec.Driver
	res, err := sparkResources(&d.SparkPodSpec, d.CoreRequest)
	if err != nil {
		return nil, fmt.Errorf("driver: %w", err)
	}
	name := d.PodName
	if name == "" {
		name = app.Name + "-driver"
	}
	tl, ta := templateMeta(d.Template)
	labels := merged(tl, d.Labels, sparkLabels(app, "driver"))
	annotations := merged(ta, d.Annotations, simAnnotations(app.Annotations))
	pl := placement{d.SchedulerName, d.PriorityClassName, d.Affinity, d.Tolerations, d.NodeSelector}.orTemplate(d.Template)
	if pl.nodeSelector == nil {
		pl.nodeSelector = app.Spec.NodeSelector
	}
	image := firstOf(d.Image, app.Spec.Image)
	return newPod(app.Namespace, name, "spark-kubernetes-driver", image, labels, annotations, res, pl, d.Env, ownerOf(app, sparkv1beta2.GroupVersion.String(), sparkv1beta2.SparkApplicationKind)), nil
}

// SparkExecutorPod is executor n (from 1) of an application, owned by its driver pod.
func SparkExecutorPod(app *sparkv1beta2.SparkApplication, driver *corev1.Pod, n int) (*corev1.Pod, error) {
	e := &app.Spec.Executor
	res, err := sparkResources(&e.SparkPodSpec, e.CoreRequest)
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	tl, ta := templateMeta(e.Template)
	labels := merged(tl, e.Labels, sparkLabels(app, "executor"), map[string]string{"spark-exec-id": strconv.Itoa(n)})
	annotations := merged(ta, e.Annotations)
	pl := placement{e.SchedulerName, e.PriorityClassName, e.Affinity, e.Tolerations, e.NodeSelector}.orTemplate(e.Template)
	if pl.nodeSelector == nil {
		pl.nodeSelector = app.Spec.NodeSelector
	}
	image := firstOf(e.Image, app.Spec.Image)
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: driver.Name, UID: driver.UID}
	return newPod(app.Namespace, fmt.Sprintf("%s-exec-%d", app.Name, n), "spark-kubernetes-executor", image, labels, annotations, res, pl, e.Env, owner), nil
}

func sparkLabels(app *sparkv1beta2.SparkApplication, role string) map[string]string {
	return map[string]string{
		"spark-role":                    role,
		"spark-app-name":                app.Name,
		"spark-app-selector":            sparkAppID(app),
		"sparkoperator.k8s.io/app-name": app.Name,
		"sparkoperator.k8s.io/launched-by-spark-operator": "true",
		AppLabel:  appLabel(sparkv1beta2.SparkApplicationKind, app.Name),
		RoleLabel: role,
	}
}

func sparkAppID(app *sparkv1beta2.SparkApplication) string {
	uid := strings.ReplaceAll(string(app.UID), "-", "")
	if len(uid) > 16 {
		uid = uid[:16]
	}
	return "spark-" + uid
}

// flinkResources are a Flink pod's container resources from its resource block, plus the
// extra resources of its pod template.
func flinkResources(r *flinkv1beta1.Resource, templates ...*corev1.PodTemplateSpec) (corev1.ResourceRequirements, error) {
	cpu, mem := 1.0, "1g"
	if r != nil {
		if r.CPU != nil {
			cpu = *r.CPU
		}
		if r.Memory != "" {
			mem = r.Memory
		}
	}
	bytes, err := parseMemory(mem, 1)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	cpuQ := *resource.NewMilliQuantity(int64(math.Round(cpu*1000)), resource.DecimalSI)
	memQ := *resource.NewQuantity(bytes, resource.BinarySI)
	req := corev1.ResourceList{corev1.ResourceCPU: cpuQ, corev1.ResourceMemory: memQ}
	lim := corev1.ResourceList{corev1.ResourceCPU: cpuQ.DeepCopy(), corev1.ResourceMemory: memQ.DeepCopy()}
	for _, t := range templates {
		addExtra(req, lim, t)
	}
	return corev1.ResourceRequirements{Requests: req, Limits: lim}, nil
}

// mainContainer finds the template's flink-main-container, if any, for addExtra.
func mainContainer(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if t == nil {
		return nil
	}
	for _, c := range t.Spec.Containers {
		if c.Name == "flink-main-container" {
			out := t.DeepCopy()
			out.Spec.Containers = []corev1.Container{c}
			return out
		}
	}
	return nil
}

func flinkPlacement(templates ...*corev1.PodTemplateSpec) placement {
	var pl placement
	for _, t := range templates {
		pl = pl.orTemplate(t)
	}
	return pl
}

// FlinkJobManagerPod is the JobManager of a deployment.
func FlinkJobManagerPod(dep *flinkv1beta1.FlinkDeployment) (*corev1.Pod, error) {
	var jmTemplate *corev1.PodTemplateSpec
	var res *flinkv1beta1.Resource
	if dep.Spec.JobManager != nil {
		jmTemplate, res = dep.Spec.JobManager.PodTemplate, dep.Spec.JobManager.Resource
	}
	r, err := flinkResources(res, mainContainer(dep.Spec.PodTemplate), mainContainer(jmTemplate))
	if err != nil {
		return nil, fmt.Errorf("jobManager: %w", err)
	}
	labels, annotations := flinkMeta(dep, "jobmanager", jmTemplate)
	maps.Copy(annotations, simAnnotations(dep.Annotations))
	return newPod(dep.Namespace, dep.Name+"-jobmanager", "flink-main-container", dep.Spec.Image, labels, annotations, r,
		flinkPlacement(jmTemplate, dep.Spec.PodTemplate), nil, ownerOf(dep, flinkv1beta1.GroupVersion.String(), flinkv1beta1.FlinkDeploymentKind)), nil
}

// FlinkTaskManagerPod is TaskManager n (from 1), owned by the JobManager pod.
func FlinkTaskManagerPod(dep *flinkv1beta1.FlinkDeployment, jm *corev1.Pod, n int) (*corev1.Pod, error) {
	var tmTemplate *corev1.PodTemplateSpec
	var res *flinkv1beta1.Resource
	if dep.Spec.TaskManager != nil {
		tmTemplate, res = dep.Spec.TaskManager.PodTemplate, dep.Spec.TaskManager.Resource
	}
	r, err := flinkResources(res, mainContainer(dep.Spec.PodTemplate), mainContainer(tmTemplate))
	if err != nil {
		return nil, fmt.Errorf("taskManager: %w", err)
	}
	labels, annotations := flinkMeta(dep, "taskmanager", tmTemplate)
	var env []corev1.EnvVar
	if c := mainContainer(tmTemplate); c != nil {
		env = c.Spec.Containers[0].Env
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: jm.Name, UID: jm.UID}
	return newPod(dep.Namespace, fmt.Sprintf("%s-taskmanager-1-%d", dep.Name, n), "flink-main-container", dep.Spec.Image, labels, annotations, r,
		flinkPlacement(tmTemplate, dep.Spec.PodTemplate), env, owner), nil
}

func flinkMeta(dep *flinkv1beta1.FlinkDeployment, component string, own *corev1.PodTemplateSpec) (labels, annotations map[string]string) {
	sl, sa := templateMeta(dep.Spec.PodTemplate)
	ol, oa := templateMeta(own)
	labels = merged(sl, ol, map[string]string{
		"app": dep.Name, "component": component, "type": "flink-native-kubernetes",
		AppLabel: appLabel(flinkv1beta1.FlinkDeploymentKind, dep.Name), RoleLabel: component,
	})
	return labels, merged(sa, oa)
}

// TaskManagers is how many TaskManagers a deployment runs: taskManager.replicas, or the
// job's parallelism over the task slots per TaskManager.
func TaskManagers(dep *flinkv1beta1.FlinkDeployment) int {
	if tm := dep.Spec.TaskManager; tm != nil && tm.Replicas != nil {
		return int(*tm.Replicas)
	}
	parallelism := int32(1)
	if dep.Spec.Job != nil && dep.Spec.Job.Parallelism > 0 {
		parallelism = dep.Spec.Job.Parallelism
	}
	slots := 1
	if v, err := strconv.Atoi(dep.Spec.FlinkConfiguration["taskmanager.numberOfTaskSlots"]); err == nil && v > 0 {
		slots = v
	}
	return (int(parallelism) + slots - 1) / slots
}

func ownerOf(obj metav1.Object, apiVersion, kind string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: &yes}
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
