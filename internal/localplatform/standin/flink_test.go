package standin

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
)

// flinkDep builds a FlinkDeployment for a test: "clicks" with an image and a JobManager and
// TaskManager size, then the changes given.
func flinkDep(changes ...func(*flinkv1beta1.FlinkDeployment)) *flinkv1beta1.FlinkDeployment {
	dep := &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "clicks", Namespace: "ns", UID: "f11c0000-0000-4000-8000-000000000002"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{
			Image:       "flink:1.20",
			JobManager:  &flinkv1beta1.JobManagerSpec{Resource: &flinkv1beta1.Resource{CPU: ptr(0.5), Memory: "2048m"}},
			TaskManager: &flinkv1beta1.TaskManagerSpec{Resource: &flinkv1beta1.Resource{CPU: ptr(1.5), Memory: "4g"}},
		},
	}
	for _, change := range changes {
		change(dep)
	}
	return dep
}

func TestParseFlinkMemory(t *testing.T) {
	cases := map[string]int64{
		"2048m": 2 << 30, "2g": 2 << 30, "1 gb": 1 << 30, "1073741824": 1 << 30, "2Gi": 2 << 30, "1536mb": 1536 << 20,
	}
	for in, want := range cases {
		got, err := parseFlinkMemory(in)
		if err != nil || got != want {
			t.Errorf("parseFlinkMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "plenty", "-1g"} {
		if got, err := parseFlinkMemory(bad); err == nil {
			t.Errorf("parseFlinkMemory(%q) = %d, want an error", bad, got)
		}
	}
}

func TestTaskManagers(t *testing.T) {
	cases := map[string]struct {
		replicas    *int32
		parallelism int32
		conf        map[string]string
		want        int
	}{
		"replicas win":                  {replicas: ptr(int32(3)), parallelism: 10, want: 3},
		"nothing set":                   {want: 1},
		"one slot each":                 {parallelism: 4, want: 4},
		"parallelism over slots, up":    {parallelism: 5, conf: map[string]string{"taskmanager.numberOfTaskSlots": "2"}, want: 3},
		"parallelism over slots, exact": {parallelism: 6, conf: map[string]string{"taskmanager.numberOfTaskSlots": "3"}, want: 2},
		"default parallelism":           {conf: map[string]string{"parallelism.default": "4", "taskmanager.numberOfTaskSlots": "4"}, want: 1},
		"unreadable slots count as one": {parallelism: 2, conf: map[string]string{"taskmanager.numberOfTaskSlots": "two"}, want: 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dep := flinkDep(func(d *flinkv1beta1.FlinkDeployment) {
				d.Spec.TaskManager.Replicas = c.replicas
				d.Spec.Job = &flinkv1beta1.JobSpec{Parallelism: c.parallelism}
				d.Spec.FlinkConfiguration = c.conf
			})
			if got := TaskManagers(dep); got != c.want {
				t.Errorf("TaskManagers = %d, want %d", got, c.want)
			}
		})
	}
}

func TestFlinkPods_MergeTheTemplatesAndKeepTheSlot(t *testing.T) {
	dep := flinkDep(func(d *flinkv1beta1.FlinkDeployment) {
		d.Annotations = map[string]string{SimDurationAnnotation: "3s"}
		d.Spec.FlinkConfiguration = map[string]string{
			"containerized.master.env.DATASET":      "s3://d",
			"containerized.taskmanager.env.DATASET": "s3://d",
		}
		d.Spec.PodTemplate = flinkv1beta1.NewPodTemplate(&corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"slotplane.io/batchjob": "clicks"}},
			Spec: corev1.PodSpec{
				PriorityClassName: "everyone",
				Tolerations:       []corev1.Toleration{{Key: "base", Operator: corev1.TolerationOpExists}},
			},
		})
		d.Spec.TaskManager.PodTemplate = flinkv1beta1.NewPodTemplate(slotTemplate(FlinkMainContainer))
		d.Spec.TaskManager.Replicas = ptr(int32(2))
	})
	jm, err := FlinkJobManagerPod(dep)
	if err != nil {
		t.Fatal(err)
	}
	jm.UID = "jm-uid"
	tm, err := FlinkTaskManagerPod(dep, jm, 2)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.HasPrefix(jm.Name, "clicks-jobmanager-") || jm.Name != FlinkJobManagerName(dep.DeepCopy()) || tm.Name != "clicks-taskmanager-1-2" {
		t.Errorf("names %s and %s", jm.Name, tm.Name)
	}
	jmRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	if diff := cmp.Diff(jmRes, jm.Spec.Containers[0].Resources, quantities); diff != "" {
		t.Errorf("JobManager resources (-want +got):\n%s", diff)
	}
	tmRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi"), "slotplane.io/slot": resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi"), "slotplane.io/slot": resource.MustParse("1")},
	}
	if diff := cmp.Diff(tmRes, tm.Spec.Containers[0].Resources, quantities); diff != "" {
		t.Errorf("TaskManager resources (-want +got):\n%s", diff)
	}

	// The component's template wins over the deployment's (the slot template says "wc").
	for _, c := range []struct {
		pod            *corev1.Pod
		component, job string
	}{{jm, RoleJobManager, "clicks"}, {tm, RoleTaskManager, "wc"}} {
		for k, v := range map[string]string{"app": "clicks", "component": c.component, "type": "flink-native-kubernetes", "slotplane.io/batchjob": c.job} {
			if c.pod.Labels[k] != v {
				t.Errorf("%s label %s = %q, want %q", c.component, k, c.pod.Labels[k], v)
			}
		}
		if ctr := c.pod.Spec.Containers[0]; ctr.Name != FlinkMainContainer || ctr.Image != "flink:1.20" ||
			!cmp.Equal(ctr.Env, []corev1.EnvVar{{Name: "DATASET", Value: "s3://d"}}) {
			t.Errorf("%s container %s image %s env %v", c.component, ctr.Name, ctr.Image, ctr.Env)
		}
	}

	if jm.Annotations[SimDurationAnnotation] != "3s" || tm.Annotations[SimDurationAnnotation] != "" {
		t.Errorf("simulation: JobManager %q, TaskManager %q; want only the JobManager to end", jm.Annotations[SimDurationAnnotation], tm.Annotations[SimDurationAnnotation])
	}
	if jm.Spec.SchedulerName != "" || jm.Spec.PriorityClassName != "everyone" || len(jm.Spec.Tolerations) != 1 || jm.Spec.Tolerations[0].Key != "base" {
		t.Errorf("JobManager scheduling %q %q %v: want the deployment's template only", jm.Spec.SchedulerName, jm.Spec.PriorityClassName, jm.Spec.Tolerations)
	}
	if tm.Spec.SchedulerName != "slot-scheduler" || tm.Spec.PriorityClassName != "slotplane-batch" ||
		len(tm.Spec.Tolerations) != 1 || tm.Spec.Tolerations[0].Key != "slotplane.io/testbed" {
		t.Errorf("TaskManager scheduling %q %q %v: want the TaskManager template's", tm.Spec.SchedulerName, tm.Spec.PriorityClassName, tm.Spec.Tolerations)
	}
	if o := jm.OwnerReferences[0]; o.Kind != "FlinkDeployment" || o.Name != "clicks" || o.UID != dep.UID {
		t.Errorf("JobManager owner %+v", o)
	}
	if o := tm.OwnerReferences[0]; o.Kind != "Pod" || o.Name != jm.Name || o.UID != "jm-uid" {
		t.Errorf("TaskManager owner %+v", o)
	}
}

func TestFlinkResources_Configuration(t *testing.T) {
	cases := map[string]struct {
		change       func(*flinkv1beta1.FlinkDeployment)
		req, lim     string // cpu/memory as "cpu memory"
		wantErrorFor string
	}{
		"limit factors": {
			change: func(d *flinkv1beta1.FlinkDeployment) {
				d.Spec.FlinkConfiguration = map[string]string{
					"kubernetes.taskmanager.cpu.limit-factor": "2", "kubernetes.taskmanager.memory.limit-factor": "1.5",
				}
			},
			req: "1500m 4Gi", lim: "3 6Gi",
		},
		"size from the configuration, cpu from the slots": {
			change: func(d *flinkv1beta1.FlinkDeployment) {
				d.Spec.TaskManager.Resource = nil
				d.Spec.FlinkConfiguration = map[string]string{"taskmanager.memory.process.size": "1728m", "taskmanager.numberOfTaskSlots": "2"}
			},
			req: "2 1728Mi", lim: "2 1728Mi",
		},
		"no memory": {change: func(d *flinkv1beta1.FlinkDeployment) { d.Spec.TaskManager.Resource.Memory = "" }, wantErrorFor: "memory"},
		"zero cpu":  {change: func(d *flinkv1beta1.FlinkDeployment) { d.Spec.TaskManager.Resource.CPU = ptr(0.0) }, wantErrorFor: "cpu"},
		"low factor": {change: func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.FlinkConfiguration = map[string]string{"kubernetes.taskmanager.cpu.limit-factor": "0.5"}
		}, wantErrorFor: "limit-factor"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dep := flinkDep(c.change)
			tm, err := FlinkTaskManagerPod(dep, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "jm"}}, 1)
			if c.wantErrorFor != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErrorFor) {
					t.Fatalf("error %v, want one about %s", err, c.wantErrorFor)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := tm.Spec.Containers[0].Resources
			got := func(l corev1.ResourceList) string {
				cpu, mem := l[corev1.ResourceCPU], l[corev1.ResourceMemory]
				return cpu.String() + " " + mem.String()
			}
			if got(res.Requests) != c.req || got(res.Limits) != c.lim {
				t.Errorf("requests %q limits %q, want %q and %q", got(res.Requests), got(res.Limits), c.req, c.lim)
			}
		})
	}
}
