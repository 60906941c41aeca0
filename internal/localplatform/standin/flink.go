package standin

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
)

// FlinkMainContainer is the container Flink runs in, in its pods and in pod templates.
const FlinkMainContainer = "flink-main-container"

// FlinkJobManagerName is the JobManager pod's name: <name>-jobmanager-<five hex digits of the
// deployment's UID>, in the spirit of the Deployment's pod the operator makes. The suffix keeps
// it apart from the JobManager of an earlier deployment of the same name.
func FlinkJobManagerName(dep *flinkv1beta1.FlinkDeployment) string {
	return dep.Name + "-jobmanager-" + hashOf(dep.UID, 5)
}

// FlinkTaskManagerName is the name of TaskManager n (counted from 1), as Flink names the
// TaskManagers of its first resource manager attempt.
func FlinkTaskManagerName(dep *flinkv1beta1.FlinkDeployment, n int) string {
	return fmt.Sprintf("%s-taskmanager-1-%d", dep.Name, n)
}

// TaskManagers is how many TaskManagers a deployment runs: taskManager.replicas, or enough
// for the job's parallelism at taskmanager.numberOfTaskSlots each.
func TaskManagers(dep *flinkv1beta1.FlinkDeployment) int {
	if tm := dep.Spec.TaskManager; tm != nil && tm.Replicas != nil && *tm.Replicas > 0 {
		return int(*tm.Replicas)
	}
	slots := flinkTaskSlots(dep)
	return (flinkParallelism(dep) + slots - 1) / slots
}

// flinkParallelism is job.parallelism, else parallelism.default, else 1.
func flinkParallelism(dep *flinkv1beta1.FlinkDeployment) int {
	if dep.Spec.Job != nil && dep.Spec.Job.Parallelism > 0 {
		return int(dep.Spec.Job.Parallelism)
	}
	if v, err := strconv.Atoi(dep.Spec.FlinkConfiguration["parallelism.default"]); err == nil && v > 0 {
		return v
	}
	return 1
}

// flinkTaskSlots is taskmanager.numberOfTaskSlots, else 1.
func flinkTaskSlots(dep *flinkv1beta1.FlinkDeployment) int {
	if v, err := strconv.Atoi(dep.Spec.FlinkConfiguration["taskmanager.numberOfTaskSlots"]); err == nil && v > 0 {
		return v
	}
	return 1
}

// flinkJobID is the job id Flink would report; the operator fixes it from the resource's
// identity, and so does the stand-in, which keeps it across restarts.
func flinkJobID(dep *flinkv1beta1.FlinkDeployment) string {
	return hashOf(dep.UID+"/job", 32)
}

// FlinkJobManagerPod is the JobManager of a deployment: spec.podTemplate with
// jobManager.podTemplate merged over it, the JobManager's resources, and the deployment's
// simulation annotations.
func FlinkJobManagerPod(dep *flinkv1beta1.FlinkDeployment) (*corev1.Pod, error) {
	var own *corev1.PodTemplateSpec
	var size *flinkv1beta1.Resource
	if jm := dep.Spec.JobManager; jm != nil {
		own, size = jm.PodTemplate.TemplateSpec(), jm.Resource
	}
	parts, err := flinkPodParts(dep, RoleJobManager, own, size)
	if err != nil {
		return nil, fmt.Errorf("jobManager: %w", err)
	}
	if parts.annotations, err = withSim(parts.annotations, dep.Annotations); err != nil {
		return nil, fmt.Errorf("jobManager: %w", err)
	}
	parts.name = FlinkJobManagerName(dep)
	parts.env = concatEnv(parts.env, envFromConf(dep.Spec.FlinkConfiguration, "containerized.master.env."))
	parts.owner = *metav1.NewControllerRef(dep, flinkv1beta1.GroupVersion.WithKind(flinkv1beta1.FlinkDeploymentKind))
	return newPod(parts), nil
}

// FlinkTaskManagerPod is TaskManager n (counted from 1), as the JobManager asks for it: it is
// owned by the JobManager pod.
func FlinkTaskManagerPod(dep *flinkv1beta1.FlinkDeployment, jm *corev1.Pod, n int) (*corev1.Pod, error) {
	var own *corev1.PodTemplateSpec
	var size *flinkv1beta1.Resource
	if tm := dep.Spec.TaskManager; tm != nil {
		own, size = tm.PodTemplate.TemplateSpec(), tm.Resource
	}
	parts, err := flinkPodParts(dep, RoleTaskManager, own, size)
	if err != nil {
		return nil, fmt.Errorf("taskManager: %w", err)
	}
	parts.annotations = withoutSim(parts.annotations)
	parts.name = FlinkTaskManagerName(dep, n)
	parts.env = concatEnv(parts.env, envFromConf(dep.Spec.FlinkConfiguration, "containerized.taskmanager.env."))
	yes := true
	parts.owner = metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: jm.Name, UID: jm.UID, Controller: &yes}
	return newPod(parts), nil
}

// flinkPodParts is what a JobManager and a TaskManager pod share: the deployment's pod
// template with the component's own merged over it, and the component's resources.
func flinkPodParts(dep *flinkv1beta1.FlinkDeployment, component string, own *corev1.PodTemplateSpec, size *flinkv1beta1.Resource) (podParts, error) {
	base := dep.Spec.PodTemplate.TemplateSpec()
	baseMain := templateContainer(base, FlinkMainContainer, false)
	ownMain := templateContainer(own, FlinkMainContainer, false)
	res, err := flinkResources(dep, component, size, templateResources(baseMain, ownMain))
	if err != nil {
		return podParts{}, err
	}
	image := firstOf(dep.Spec.Image, imageOf(ownMain), imageOf(baseMain))
	if image == "" {
		return podParts{}, errors.New("no container image (spec.image)")
	}
	bl, ba := templateMeta(base)
	ol, oa := templateMeta(own)
	return podParts{
		namespace: dep.Namespace,
		app:       dep.Name, uid: dep.UID, role: component,
		container: FlinkMainContainer, image: image,
		labels: merged(bl, ol, map[string]string{
			"app": labelValue(dep.Name), "component": component, "type": "flink-native-kubernetes",
		}),
		annotations:    merged(ba, oa),
		resources:      res,
		env:            concatEnv(envOf(baseMain), envOf(ownMain)),
		placement:      placement{}.or(own).or(base),
		serviceAccount: firstOf(dep.Spec.ServiceAccount, templateServiceAccount(own), templateServiceAccount(base)),
	}, nil
}

// flinkResources are a JobManager's or TaskManager's container resources as Flink sets them
// on top of the templates': cpu (resource.cpu, else kubernetes.<component>.cpu, else 1 for the
// JobManager and the task slot count for a TaskManager) and memory (resource.memory, else
// <component>.memory.process.size; the whole process, which is what the pod asks for), with
// limits at the configured limit factors (1 by default).
func flinkResources(dep *flinkv1beta1.FlinkDeployment, component string, size *flinkv1beta1.Resource, base corev1.ResourceRequirements) (corev1.ResourceRequirements, error) {
	conf := dep.Spec.FlinkConfiguration
	cpu := 1.0
	if component == RoleTaskManager {
		cpu = float64(flinkTaskSlots(dep))
	}
	if v := conf["kubernetes."+component+".cpu"]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("kubernetes.%s.cpu %q is not a number", component, v)
		}
		cpu = f
	}
	memory := conf[component+".memory.process.size"]
	if size != nil {
		if size.CPU != nil {
			cpu = *size.CPU
		}
		memory = firstOf(size.Memory, memory)
	}
	if cpu <= 0 || math.IsNaN(cpu) || math.IsInf(cpu, 0) {
		return corev1.ResourceRequirements{}, fmt.Errorf("cpu %v is not a positive number", cpu)
	}
	if memory == "" {
		return corev1.ResourceRequirements{}, errors.New("resource.memory is not set")
	}
	bytes, err := parseFlinkMemory(memory)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	memMiB := bytes >> 20
	if memMiB == 0 {
		return corev1.ResourceRequirements{}, fmt.Errorf("memory %q is under 1 MiB", memory)
	}
	cpuFactor, err := limitFactor(conf, "kubernetes."+component+".cpu.limit-factor")
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	memFactor, err := limitFactor(conf, "kubernetes."+component+".memory.limit-factor")
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	res := base
	res.Requests[corev1.ResourceCPU] = cores(cpu)
	res.Limits[corev1.ResourceCPU] = cores(cpu * cpuFactor)
	res.Requests[corev1.ResourceMemory] = mebibytes(memMiB)
	res.Limits[corev1.ResourceMemory] = mebibytes(int64(float64(memMiB) * memFactor))
	return res, nil
}

// parseFlinkMemory reads Flink's memory notation (a bare number is bytes); the operator also
// takes Kubernetes quantities such as 2Gi.
func parseFlinkMemory(s string) (int64, error) {
	if n, err := parseMemory(s, 1); err == nil {
		return n, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("memory %q is neither a Flink size like 2048m nor a quantity like 2Gi", s)
	}
	return q.Value(), nil
}

func limitFactor(conf map[string]string, key string) (float64, error) {
	v, ok := conf[key]
	if !ok {
		return 1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		return 0, fmt.Errorf("%s %q is not a number of at least 1", key, v)
	}
	return f, nil
}

// cores is a number of cores as a quantity, to the millicore.
func cores(n float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Round(n*1000)), resource.DecimalSI)
}
