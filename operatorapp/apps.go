// Package operatorapp builds the SparkApplication or FlinkDeployment of a BatchJob for one run: the
// job's persistent part (image, entry point, arguments, dataset) plus what the Scheduling
// decided (the slots, hence the replication, the executor size and the nodes). It is pure:
// the activities create what it returns.
//
// Executors and TaskManagers are made to fit their slot exactly and to be recognisable by the
// extender: the slot's resources as requests and limits, one unit of the slot resource, the
// slot profile's scheduler, the batch priority class, the toleration of dedicated test bed
// nodes, required node affinity to the nodes of the slots, the test bed label and the list
// of slot ids. The driver (JobManager) is an ordinary pod: it runs outside the slots.
//
// The labels and annotations a job asks for its pods (pod templates, Spark's driver and
// executor fields and spark.kubernetes.*.label.* settings, Flink's kubernetes.*.labels and
// .annotations settings) lose every key slotplane owns (v1alpha1.IsReservedKey) before
// slotplane adds its own: a job must not be able to write the test bed, job or slot record
// that the extender and the ghost reconciler trust.
package operatorapp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// Defaults for what a BatchJob may leave out.
const (
	DefaultSparkVersion = "3.5.3"
	DefaultFlinkVersion = "v1_20"
	// Container names the operators give the pods (a pod template's resources apply to
	// the container of this name).
	SparkExecutorContainer = "spark-kubernetes-executor"
	FlinkMainContainer     = "flink-main-container"
	// DatasetEnv carries the job's dataset into the driver and every executor.
	DatasetEnv = "SLOTPLANE_DATASET"
	// DefaultFlinkServiceAccount is the JobManager's service account when neither the job
	// nor the namespace's policy names one: the account the Flink operator's chart makes in
	// the namespaces it watches (native mode needs one that may create pods).
	DefaultFlinkServiceAccount = "flink"
)

var defaultDriverResources = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("1"),
	corev1.ResourceMemory: resource.MustParse("1Gi"),
}

// ErrInvalid: the job and the request cannot make an application (a person must fix them).
var ErrInvalid = errors.New("cannot build the application")

// Run is one run of a job in a test bed's slots.
type Run struct {
	Job     *v1alpha1.BatchJob
	Request v1alpha1.CreationRequest
	// SlotSize is the test bed's resources per slot.
	SlotSize corev1.ResourceList
	// Nodes are the names of the nodes the request's slots are on.
	Nodes []string
	// Policy is the job's namespace's policy on wrapped specs (zero: the default list).
	Policy JobPolicy
}

// Name is the application's name for a run: the job's name, a short hash of the
// Scheduling, and the run number, so a new run (of the same or another Scheduling) never
// meets the remains of an older one, whose deletion may still be going on.
func Name(job, scheduling string, run int32) string {
	sum := sha256.Sum256([]byte(scheduling))
	suffix := "-" + hex.EncodeToString(sum[:])[:5] + "-r" + strconv.Itoa(int(run))
	// Spark derives pod names (<name>-driver, <name>-exec-N) from it: keep room for them.
	const max = 40
	if len(job)+len(suffix) > max {
		job = strings.TrimRight(job[:max-len(suffix)], "-.")
	}
	return job + suffix
}

// Labels are the labels of a run's application and of the pods it asks for.
func (r Run) labels() map[string]string {
	return map[string]string{
		v1alpha1.BatchJobLabel:         r.Job.Name,
		v1alpha1.TestBedLabel:          r.Request.TestBed,
		v1alpha1.ActiveSchedulingLabel: r.Request.Scheduling,
	}
}

// annotations are the job's annotations the application carries along (not kubectl's
// bookkeeping, not slotplane's protocol, not the schedulers' notes). Other slotplane.io keys stay: the operators put
// an application's own annotations on none of its pods, so they cannot pose as a pod's
// record here, and the local stand-in reads its simulated run time from them.
func (r Run) annotations() map[string]string {
	out := map[string]string{}
	for k, v := range r.Job.Annotations {
		if strings.HasPrefix(k, "kubectl.kubernetes.io/") || k == v1alpha1.CreationRequestAnnotation || strings.HasPrefix(k, v1alpha1.SchedulerDataPrefix) ||
			k == v1alpha1.SuspendedOutcomeAnnotation || k == v1alpha1.CreatedAtAnnotation {
			continue
		}
		out[k] = v
	}
	if o := r.Job.Spec.SuspendedOutcome; o != "" {
		out[v1alpha1.SuspendedOutcomeAnnotation] = string(o)
	}
	return out
}

func (r Run) validate() error {
	if r.Job == nil {
		return fmt.Errorf("%w: no job", ErrInvalid)
	}
	if len(r.Request.Slots) == 0 {
		return fmt.Errorf("%w: job %s: the request names no slots", ErrInvalid, r.Job.Name)
	}
	if len(r.Nodes) == 0 {
		return fmt.Errorf("%w: job %s: the slots are on no known node", ErrInvalid, r.Job.Name)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r.SlotSize[name]; !ok || q.Sign() <= 0 {
			return fmt.Errorf("%w: the test bed's slots have no %s", ErrInvalid, name)
		}
	}
	if refused := CheckSpec(&r.Job.Spec, r.Policy); len(refused) > 0 {
		return fmt.Errorf("%w: job %s: %w", ErrInvalid, r.Job.Name, &SpecError{Refused: refused})
	}
	return nil
}

// SpecError lists what a wrapped spec may not set.
type SpecError struct{ Refused []SpecRefusal }

func (e *SpecError) Error() string {
	parts := make([]string, len(e.Refused))
	for i, r := range e.Refused {
		parts[i] = r.String()
	}
	return "the wrapped spec sets what it may not: " + strings.Join(parts, "; ")
}

// slotPodTemplate is what every executor or TaskManager carries beside its size.
func (r Run) slotPodTemplate(container string) *corev1.PodTemplateSpec {
	nodes := slices.Clone(r.Nodes)
	slices.Sort(nodes)
	one := resource.MustParse("1")
	slot := corev1.ResourceList{corev1.ResourceName(v1alpha1.SlotResource): one}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      r.labels(),
			Annotations: map[string]string{v1alpha1.SlotIDsAnnotation: slots.FormatSlotIDs(r.Request.Slots)},
		},
		Spec: corev1.PodSpec{
			SchedulerName:     v1alpha1.SlotSchedulerName,
			PriorityClassName: v1alpha1.BatchPriorityClass,
			Tolerations:       []corev1.Toleration{{Key: v1alpha1.TestBedTaint, Operator: corev1.TolerationOpExists}},
			Affinity:          nodeAffinity(nodes),
			Containers: []corev1.Container{{
				Name:      container,
				Resources: corev1.ResourceRequirements{Requests: slot, Limits: slot.DeepCopy()},
			}},
		},
	}
}

// nodeAffinity requires one of the nodes. A node-name field selector takes one value, so
// each node is a term of its own (terms are alternatives).
func nodeAffinity(nodes []string) *corev1.Affinity {
	terms := make([]corev1.NodeSelectorTerm, len(nodes))
	for i, n := range nodes {
		terms[i] = corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n},
		}}}
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

// Spark builds the run's SparkApplication.
func Spark(r Run) (*sparkv1beta2.SparkApplication, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	job := r.Job
	if job.Spec.Framework != v1alpha1.FrameworkSpark {
		return nil, fmt.Errorf("%w: job %s is a %s job", ErrInvalid, job.Name, job.Spec.Framework)
	}
	app := &sparkv1beta2.SparkApplication{}
	if raw := job.Spec.SparkApplication; raw != nil && len(raw.Raw) > 0 {
		if err := json.Unmarshal(raw.Raw, &app.Spec); err != nil {
			return nil, fmt.Errorf("%w: job %s: spec.sparkApplication: %w", ErrInvalid, job.Name, err)
		}
	}
	app.TypeMeta = metav1.TypeMeta{APIVersion: sparkv1beta2.GroupVersion.String(), Kind: sparkv1beta2.SparkApplicationKind}
	app.ObjectMeta = metav1.ObjectMeta{
		Name: Name(job.Name, r.Request.Scheduling, r.Request.Run), Namespace: job.Namespace,
		Labels: r.labels(), Annotations: r.annotations(),
	}
	s := &app.Spec
	a := job.Spec.Application
	s.Type = sparkv1beta2.SparkApplicationType(a.Type)
	if s.Type == "" {
		s.Type = sparkv1beta2.SparkApplicationTypeScala
	}
	s.SparkVersion = firstNonEmpty(a.Version, s.SparkVersion, DefaultSparkVersion)
	s.Mode = sparkv1beta2.DeployModeCluster
	s.Image = a.Image
	s.MainClass = a.MainClass
	s.MainApplicationFile = a.MainApplicationFile
	s.Arguments = slices.Clone(a.Arguments)
	// slotplane owns restarts (a new run) and the executor count (one per slot).
	s.RestartPolicy = sparkv1beta2.RestartPolicy{Type: sparkv1beta2.RestartPolicyNever}
	s.DynamicAllocation = nil
	s.BatchScheduler, s.BatchSchedulerOptions = "", nil

	driver := withDefaults(job.Spec.DriverResources, defaultDriverResources)
	if err := sparkSize(&s.Driver.SparkPodSpec, &s.Driver.CoreRequest, driver); err != nil {
		return nil, fmt.Errorf("%w: job %s: driver: %w", ErrInvalid, job.Name, err)
	}
	s.SparkConf = withoutReservedSparkKeys(s.SparkConf)
	s.Driver.Labels = merge(userKeys(s.Driver.Labels), map[string]string{v1alpha1.BatchJobLabel: job.Name})
	s.Driver.Annotations = userKeys(s.Driver.Annotations)
	stripTemplate(s.Driver.Template)
	s.Driver.Env = withDataset(s.Driver.Env, a.Dataset)
	if s.Driver.ServiceAccount == "" {
		s.Driver.ServiceAccount = r.Policy.SparkServiceAccount
	}

	e := &s.Executor
	if err := sparkSize(&e.SparkPodSpec, &e.CoreRequest, r.SlotSize); err != nil {
		return nil, fmt.Errorf("%w: job %s: executor: %w", ErrInvalid, job.Name, err)
	}
	instances := int32(len(r.Request.Slots))
	e.Instances = &instances
	tmpl := r.slotPodTemplate(SparkExecutorContainer)
	e.Template = tmpl
	e.Labels = merge(userKeys(e.Labels), tmpl.Labels)
	e.Annotations = merge(userKeys(e.Annotations), tmpl.Annotations)
	e.SchedulerName = tmpl.Spec.SchedulerName
	e.PriorityClassName = tmpl.Spec.PriorityClassName
	e.Tolerations = tmpl.Spec.Tolerations
	e.Affinity = tmpl.Spec.Affinity
	e.NodeSelector = nil
	e.Env = withDataset(e.Env, a.Dataset)
	return app, nil
}

// sparkSize sets cores and memory so that the pod Spark makes requests exactly size: Spark
// asks for memory + memoryOverhead, so both are set explicitly, the overhead a tenth of the
// size with Spark's floor of 384 MiB, the heap the rest. (Left to itself Spark would take a
// factor of the heap, and the pod would not match the slot.)
func sparkSize(p *sparkv1beta2.SparkPodSpec, coreRequest *string, size corev1.ResourceList) error {
	cpu, mem := size[corev1.ResourceCPU], size[corev1.ResourceMemory]
	if cpu.Sign() <= 0 || mem.Sign() <= 0 {
		return errors.New("needs cpu and memory")
	}
	cores := int32((cpu.MilliValue() + 999) / 1000)
	p.Cores = &cores
	*coreRequest = cpu.String()
	p.CoreLimit = cpu.String()
	totalMiB := mem.Value() >> 20
	overheadMiB := max(384, totalMiB/10)
	if totalMiB-overheadMiB < 128 {
		return fmt.Errorf("memory %s leaves under 128 MiB beside Spark's %d MiB overhead", mem.String(), overheadMiB)
	}
	p.Memory = strconv.FormatInt(totalMiB-overheadMiB, 10) + "m"
	p.MemoryOverhead = strconv.FormatInt(overheadMiB, 10) + "m"
	p.MemoryLimit = ""
	return nil
}

// Flink builds the run's FlinkDeployment (application mode, native Kubernetes).
func Flink(r Run) (*flinkv1beta1.FlinkDeployment, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	job := r.Job
	if job.Spec.Framework != v1alpha1.FrameworkFlink {
		return nil, fmt.Errorf("%w: job %s is a %s job", ErrInvalid, job.Name, job.Spec.Framework)
	}
	dep := &flinkv1beta1.FlinkDeployment{}
	if raw := job.Spec.FlinkDeployment; raw != nil && len(raw.Raw) > 0 {
		if err := json.Unmarshal(raw.Raw, &dep.Spec); err != nil {
			return nil, fmt.Errorf("%w: job %s: spec.flinkDeployment: %w", ErrInvalid, job.Name, err)
		}
	}
	dep.TypeMeta = metav1.TypeMeta{APIVersion: flinkv1beta1.GroupVersion.String(), Kind: flinkv1beta1.FlinkDeploymentKind}
	dep.ObjectMeta = metav1.ObjectMeta{
		Name: Name(job.Name, r.Request.Scheduling, r.Request.Run), Namespace: job.Namespace,
		Labels: r.labels(), Annotations: r.annotations(),
	}
	s := &dep.Spec
	a := job.Spec.Application
	s.Image = a.Image
	s.FlinkVersion = flinkv1beta1.FlinkVersion(firstNonEmpty(a.Version, string(s.FlinkVersion), DefaultFlinkVersion))
	s.Mode = flinkv1beta1.DeploymentModeNative
	if s.ServiceAccount == "" {
		s.ServiceAccount = firstNonEmpty(r.Policy.FlinkServiceAccount, DefaultFlinkServiceAccount)
	}
	// One task slot per TaskManager: a TaskManager is what fills a test bed slot.
	s.FlinkConfiguration = merge(withoutReservedFlinkKeys(s.FlinkConfiguration), map[string]string{"taskmanager.numberOfTaskSlots": "1"})

	jm, err := flinkResource(withDefaults(job.Spec.DriverResources, defaultDriverResources))
	if err != nil {
		return nil, fmt.Errorf("%w: job %s: jobManager: %w", ErrInvalid, job.Name, err)
	}
	one := int32(1)
	if s.JobManager == nil {
		s.JobManager = &flinkv1beta1.JobManagerSpec{}
	}
	stripFlinkTemplate(s.JobManager.PodTemplate)
	s.JobManager.Resource, s.JobManager.Replicas = jm, &one

	tm, err := flinkResource(r.SlotSize)
	if err != nil {
		return nil, fmt.Errorf("%w: job %s: taskManager: %w", ErrInvalid, job.Name, err)
	}
	replicas := int32(len(r.Request.Slots))
	s.TaskManager = &flinkv1beta1.TaskManagerSpec{Resource: tm, Replicas: &replicas, PodTemplate: flinkv1beta1.NewPodTemplate(r.slotPodTemplate(FlinkMainContainer))}
	s.TaskManager.PodTemplate.Spec.Containers[0].Env = withDataset(nil, a.Dataset)

	if s.Job == nil {
		s.Job = &flinkv1beta1.JobSpec{}
	}
	s.Job.JarURI = a.MainApplicationFile
	s.Job.EntryClass = a.MainClass
	s.Job.Args = slices.Clone(a.Arguments)
	s.Job.Parallelism = replicas
	s.Job.State = flinkv1beta1.JobStateRunning
	s.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
	if s.PodTemplate == nil {
		s.PodTemplate = &flinkv1beta1.PodTemplate{}
	}
	// The operator merges this template into the TaskManagers' too, so what it carries
	// reaches the slot pods.
	stripFlinkTemplate(s.PodTemplate)
	s.PodTemplate.Labels = merge(s.PodTemplate.Labels, map[string]string{v1alpha1.BatchJobLabel: job.Name})
	if a.Dataset != "" {
		s.FlinkConfiguration["containerized.master.env."+DatasetEnv] = a.Dataset
		s.FlinkConfiguration["containerized.taskmanager.env."+DatasetEnv] = a.Dataset
	}
	return dep, nil
}

// flinkResource is a Flink resource block for a size: cpu as a number of cores, memory as
// the whole process (what the pod requests) in MiB.
func flinkResource(size corev1.ResourceList) (*flinkv1beta1.Resource, error) {
	cpu, mem := size[corev1.ResourceCPU], size[corev1.ResourceMemory]
	if cpu.Sign() <= 0 || mem.Sign() <= 0 {
		return nil, errors.New("needs cpu and memory")
	}
	cores := float64(cpu.MilliValue()) / 1000
	return &flinkv1beta1.Resource{CPU: &cores, Memory: strconv.FormatInt(mem.Value()>>20, 10) + "m"}, nil
}

// userKeys returns the labels or annotations a job gave without the keys slotplane owns; nil
// stays nil.
func userKeys(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !v1alpha1.IsReservedKey(k) {
			out[k] = v
		}
	}
	return out
}

// stripTemplate drops the keys slotplane owns from a job's pod template.
func stripTemplate(t *corev1.PodTemplateSpec) {
	if t == nil {
		return
	}
	t.Labels, t.Annotations = userKeys(t.Labels), userKeys(t.Annotations)
}

// stripFlinkTemplate is stripTemplate for the Flink operator's pod templates.
func stripFlinkTemplate(t *flinkv1beta1.PodTemplate) {
	if t == nil {
		return
	}
	t.Labels, t.Annotations = userKeys(t.Labels), userKeys(t.Annotations)
}

// sparkPodKeyPrefixes are the Spark settings that put one label or annotation, named by the
// rest of the setting's key, on the driver or executor pods.
var sparkPodKeyPrefixes = []string{
	"spark.kubernetes.driver.label.",
	"spark.kubernetes.driver.annotation.",
	"spark.kubernetes.executor.label.",
	"spark.kubernetes.executor.annotation.",
}

// withoutReservedSparkKeys returns a sparkConf without the settings that would put a key
// slotplane owns on a pod.
func withoutReservedSparkKeys(conf map[string]string) map[string]string {
	if conf == nil {
		return nil
	}
	out := make(map[string]string, len(conf))
	for k, v := range conf {
		reserved := false
		for _, prefix := range sparkPodKeyPrefixes {
			if rest, ok := strings.CutPrefix(k, prefix); ok && v1alpha1.IsReservedKey(rest) {
				reserved = true
			}
		}
		if !reserved {
			out[k] = v
		}
	}
	return out
}

// flinkPodKeySettings are the Flink settings that list labels or annotations for the
// JobManager or TaskManager pods, as "key:value,key:value".
var flinkPodKeySettings = []string{
	"kubernetes.jobmanager.labels",
	"kubernetes.jobmanager.annotations",
	"kubernetes.taskmanager.labels",
	"kubernetes.taskmanager.annotations",
}

// withoutReservedFlinkKeys returns a flinkConfiguration whose pod label and annotation lists
// hold no key slotplane owns; a list left empty is dropped.
func withoutReservedFlinkKeys(conf map[string]string) map[string]string {
	if conf == nil {
		return nil
	}
	out := maps.Clone(conf)
	for _, setting := range flinkPodKeySettings {
		v, ok := out[setting]
		if !ok {
			continue
		}
		var kept []string
		for entry := range strings.SplitSeq(v, ",") {
			key, _, _ := strings.Cut(entry, ":")
			if !v1alpha1.IsReservedKey(strings.TrimSpace(key)) {
				kept = append(kept, entry)
			}
		}
		if len(kept) == 0 {
			delete(out, setting)
		} else {
			out[setting] = strings.Join(kept, ",")
		}
	}
	return out
}

func withDataset(env []corev1.EnvVar, dataset string) []corev1.EnvVar {
	env = slices.DeleteFunc(slices.Clone(env), func(e corev1.EnvVar) bool { return e.Name == DatasetEnv })
	if dataset == "" {
		return env
	}
	return append(env, corev1.EnvVar{Name: DatasetEnv, Value: dataset})
}

// merge returns base with over's entries on top (neither is modified).
func merge(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// withDefaults is given with the defaults filling what it lacks.
func withDefaults(given, defaults corev1.ResourceList) corev1.ResourceList {
	out := defaults.DeepCopy()
	for k, v := range given {
		out[k] = v.DeepCopy()
	}
	return out
}
