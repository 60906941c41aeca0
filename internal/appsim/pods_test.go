package appsim

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
)

func TestParseMemory(t *testing.T) {
	cases := []struct {
		in   string
		bare int64
		want int64
	}{
		{"512m", 1 << 20, 512 << 20}, {"2g", 1 << 20, 2 << 30}, {"1024", 1 << 20, 1024 << 20},
		{"2048mb", 1, 2048 << 20}, {"2 gb", 1, 2 << 30}, {"1024", 1, 1024}, {"4096k", 1, 4096 << 10},
	}
	for _, c := range cases {
		got, err := parseMemory(c.in, c.bare)
		if err != nil || got != c.want {
			t.Errorf("parseMemory(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if _, err := parseMemory("lots", 1); err == nil {
		t.Error("a word parsed as memory")
	}
}

func TestSparkPodsFollowTheSpec(t *testing.T) {
	two, cores := int32(2), int32(2)
	app := &sparkv1beta2.SparkApplication{
		ObjectMeta: metav1.ObjectMeta{Name: "wc", Namespace: "ns", UID: "1234-5678", Annotations: map[string]string{SimDurationAnnotation: "5s", "other": "x"}},
		Spec: sparkv1beta2.SparkApplicationSpec{
			Image:  "spark:3.5.3",
			Driver: sparkv1beta2.DriverSpec{SparkPodSpec: sparkv1beta2.SparkPodSpec{Memory: "1g"}, CoreRequest: "500m"},
			Executor: sparkv1beta2.ExecutorSpec{
				SparkPodSpec: sparkv1beta2.SparkPodSpec{
					Cores: &cores, Memory: "3687m", MemoryOverhead: "409m", SchedulerName: "slot-scheduler",
					Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"slotplane.io/slot-ids": "1,2"},
					Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{PriorityClassName: "batch", Containers: []corev1.Container{{
						Name: "spark-kubernetes-executor", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"slotplane.io/slot": resource.MustParse("1")}},
					}}}},
				},
				Instances: &two, CoreRequest: "1500m",
			},
		},
	}
	driver, err := SparkDriverPod(app)
	if err != nil {
		t.Fatal(err)
	}
	mem := driver.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
	if driver.Name != "wc-driver" || mem.Value() != (1<<30)+(384<<20) || driver.Annotations[SimDurationAnnotation] != "5s" || driver.Annotations["other"] != "" {
		t.Errorf("driver %s memory %s annotations %v", driver.Name, mem.String(), driver.Annotations)
	}
	exec, err := SparkExecutorPod(app, driver, 2)
	if err != nil {
		t.Fatal(err)
	}
	r := exec.Spec.Containers[0].Resources.Requests
	cpu, m, slot := r[corev1.ResourceCPU], r[corev1.ResourceMemory], r["slotplane.io/slot"]
	if exec.Name != "wc-exec-2" || cpu.String() != "1500m" || m.Value() != 4096<<20 || slot.Value() != 1 {
		t.Errorf("executor %s cpu %s memory %d slot %s", exec.Name, cpu.String(), m.Value(), slot.String())
	}
	if exec.Spec.SchedulerName != "slot-scheduler" || exec.Spec.PriorityClassName != "batch" || exec.Labels["team"] != "a" || exec.Labels["spark-role"] != "executor" {
		t.Errorf("executor placement %q %q labels %v", exec.Spec.SchedulerName, exec.Spec.PriorityClassName, exec.Labels)
	}
	if exec.Annotations["slotplane.io/slot-ids"] != "1,2" || exec.OwnerReferences[0].Name != "wc-driver" {
		t.Errorf("executor annotations %v owner %v", exec.Annotations, exec.OwnerReferences)
	}
}

func TestFlinkPodsFollowTheSpec(t *testing.T) {
	cpu, replicas := 1.5, int32(3)
	dep := &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "clicks", Namespace: "ns"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{
			Image: "flink:1.20",
			TaskManager: &flinkv1beta1.TaskManagerSpec{Resource: &flinkv1beta1.Resource{CPU: &cpu, Memory: "4096m"}, Replicas: &replicas,
				PodTemplate: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: "slot-scheduler", Containers: []corev1.Container{{
					Name: "flink-main-container", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"slotplane.io/slot": resource.MustParse("1")}},
				}}}}},
		},
	}
	jm, err := FlinkJobManagerPod(dep)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := FlinkTaskManagerPod(dep, jm, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := tm.Spec.Containers[0].Resources.Requests
	c, m, slot := r[corev1.ResourceCPU], r[corev1.ResourceMemory], r["slotplane.io/slot"]
	if tm.Name != "clicks-taskmanager-1-3" || c.String() != "1500m" || m.Value() != 4096<<20 || slot.Value() != 1 || tm.Spec.SchedulerName != "slot-scheduler" {
		t.Errorf("taskmanager %s cpu %s memory %d slot %s scheduler %s", tm.Name, c.String(), m.Value(), slot.String(), tm.Spec.SchedulerName)
	}
	if jm.Spec.SchedulerName != "" {
		t.Error("the JobManager took the TaskManagers' scheduler")
	}
	if TaskManagers(dep) != 3 {
		t.Errorf("TaskManagers = %d", TaskManagers(dep))
	}
	dep.Spec.TaskManager.Replicas = nil
	dep.Spec.Job = &flinkv1beta1.JobSpec{Parallelism: 5}
	dep.Spec.FlinkConfiguration = map[string]string{"taskmanager.numberOfTaskSlots": "2"}
	if TaskManagers(dep) != 3 {
		t.Errorf("parallelism 5 over 2 task slots: %d TaskManagers, want 3", TaskManagers(dep))
	}
}

// The kwok stages must name the same annotations as the code.
func TestKwokStagesUseTheAnnotations(t *testing.T) {
	data, err := os.ReadFile("../testcluster/kwok-stages.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{SimDurationAnnotation, SimOutcomeAnnotation} {
		if !strings.Contains(string(data), `.metadata.annotations["`+key+`"]`) {
			t.Errorf("kwok-stages.yaml does not read %s", key)
		}
	}
}
