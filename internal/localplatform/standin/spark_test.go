package standin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
)

// sparkApp builds a SparkApplication for a test: a Scala application "wc" with an image, then
// the changes given.
func sparkApp(changes ...func(*sparkv1beta2.SparkApplication)) *sparkv1beta2.SparkApplication {
	app := &sparkv1beta2.SparkApplication{
		ObjectMeta: metav1.ObjectMeta{Name: "wc", Namespace: "ns", UID: "5c1e5a42-0000-4000-8000-000000000001"},
		Spec: sparkv1beta2.SparkApplicationSpec{
			Type: sparkv1beta2.SparkApplicationTypeScala, SparkVersion: "3.5.3", Image: "spark:3.5.3",
			MainApplicationFile: "local:///opt/app.jar",
		},
	}
	for _, change := range changes {
		change(app)
	}
	return app
}

func ptr[T any](v T) *T { return &v }

func slotTemplate(container string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"slotplane.io/batchjob": "wc"},
			Annotations: map[string]string{"slotplane.io/slot-ids": "1,2", SimDurationAnnotation: "1s"},
		},
		Spec: corev1.PodSpec{
			SchedulerName:     "slot-scheduler",
			PriorityClassName: "slotplane-batch",
			Tolerations:       []corev1.Toleration{{Key: "slotplane.io/testbed", Operator: corev1.TolerationOpExists}},
			NodeSelector:      map[string]string{"zone": "a"},
			Containers: []corev1.Container{{
				Name: container,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"slotplane.io/slot": resource.MustParse("1")},
					Limits:   corev1.ResourceList{"slotplane.io/slot": resource.MustParse("1")},
				},
			}},
		},
	}
}

func TestSparkMemoryMiB_IsMemoryPlusSparksOverhead(t *testing.T) {
	cases := map[string]struct {
		app    *sparkv1beta2.SparkApplication
		role   string
		memory string
		extra  string
		want   int64
	}{
		"default 1g gets the 384 MiB floor": {app: sparkApp(), want: 1024 + 384},
		"a tenth above the floor":           {app: sparkApp(), memory: "8g", want: 8192 + 819},
		"Spark rounds the tenth down":       {app: sparkApp(), memory: "4097m", want: 4097 + 409},
		"a bare number is MiB":              {app: sparkApp(), memory: "2048", want: 2048 + 384},
		"given overhead wins":               {app: sparkApp(), memory: "3687m", extra: "409m", want: 4096},
		"given overhead, bare MiB":          {app: sparkApp(), memory: "1g", extra: "100", want: 1124},
		"Python defaults to 0.4": {
			app:    sparkApp(func(a *sparkv1beta2.SparkApplication) { a.Spec.Type = sparkv1beta2.SparkApplicationTypePython }),
			memory: "4g", want: 4096 + 1638,
		},
		"memoryOverheadFactor": {
			app:    sparkApp(func(a *sparkv1beta2.SparkApplication) { a.Spec.MemoryOverheadFactor = "0.2" }),
			memory: "4g", want: 4096 + 819,
		},
		"the role's factor wins over the application's": {
			app: sparkApp(func(a *sparkv1beta2.SparkApplication) {
				a.Spec.MemoryOverheadFactor = "0.2"
				a.Spec.SparkConf = map[string]string{"spark.executor.memoryOverheadFactor": "0.5"}
			}),
			role: RoleExecutor, memory: "4g", want: 4096 + 2048,
		},
		"sparkConf memory when the spec has none": {
			app: sparkApp(func(a *sparkv1beta2.SparkApplication) {
				a.Spec.SparkConf = map[string]string{"spark.driver.memory": "2g"}
			}),
			want: 2048 + 384,
		},
		"minMemoryOverhead lowers the floor": {
			app: sparkApp(func(a *sparkv1beta2.SparkApplication) {
				a.Spec.SparkConf = map[string]string{"spark.driver.minMemoryOverhead": "100m"}
			}),
			memory: "1g", want: 1024 + 102,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			role := c.role
			if role == "" {
				role = RoleDriver
			}
			got, err := sparkMemoryMiB(c.app, role, &sparkv1beta2.SparkPodSpec{Memory: c.memory, MemoryOverhead: c.extra})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("memory %q overhead %q: %d MiB, want %d", c.memory, c.extra, got, c.want)
			}
		})
	}
}

func TestSparkMemoryMiB_RefusesWhatSparkRefuses(t *testing.T) {
	cases := map[string]struct {
		app           *sparkv1beta2.SparkApplication
		memory, extra string
	}{
		"memory word":         {app: sparkApp(), memory: "lots"},
		"overhead word":       {app: sparkApp(), memory: "1g", extra: "some"},
		"negative factor":     {app: sparkApp(func(a *sparkv1beta2.SparkApplication) { a.Spec.MemoryOverheadFactor = "-1" }), memory: "1g"},
		"factor not a number": {app: sparkApp(func(a *sparkv1beta2.SparkApplication) { a.Spec.MemoryOverheadFactor = "a tenth" }), memory: "1g"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got, err := sparkMemoryMiB(c.app, RoleDriver, &sparkv1beta2.SparkPodSpec{Memory: c.memory, MemoryOverhead: c.extra}); err == nil {
				t.Errorf("accepted, %d MiB", got)
			}
		})
	}
}

func TestSparkDriverPod_IsWhatSparkSubmitMakes(t *testing.T) {
	app := sparkApp(func(a *sparkv1beta2.SparkApplication) {
		a.Annotations = map[string]string{SimDurationAnnotation: "5s", SimOutcomeAnnotation: SimOutcomeFailed, "kubectl.kubernetes.io/note": "x"}
		a.Spec.NodeSelector = map[string]string{"pool": "plain"}
		a.Spec.Driver = sparkv1beta2.DriverSpec{
			SparkPodSpec: sparkv1beta2.SparkPodSpec{
				Cores: ptr(int32(2)), CoreLimit: "3", Memory: "2g",
				Labels:      map[string]string{"slotplane.io/batchjob": "wc"},
				Annotations: map[string]string{"team": "a"},
				Env:         []corev1.EnvVar{{Name: "DATASET", Value: "s3://d"}},
				Template: &corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"from": "template"}},
					Spec:       corev1.PodSpec{SchedulerName: "template-scheduler", PriorityClassName: "template-priority"},
				},
			},
			PriorityClassName: "driver-priority",
		}
	})
	pod, err := SparkDriverPod(app)
	if err != nil {
		t.Fatal(err)
	}
	appID := SparkAppID(app)
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "wc-driver", Namespace: "ns",
			Labels: map[string]string{
				"spark-role": "driver", "spark-app-name": "wc", "spark-app-selector": appID,
				"sparkoperator.k8s.io/app-name": "wc", "sparkoperator.k8s.io/launched-by-spark-operator": "true",
				"sparkoperator.k8s.io/submission-id": sparkSubmissionID(app),
				"slotplane.io/batchjob":              "wc", "from": "template",
				AppUIDLabel: string(app.UID), RoleLabel: RoleDriver,
			},
			Annotations: map[string]string{
				"team": "a", SimDurationAnnotation: "5s", SimOutcomeAnnotation: SimOutcomeFailed, AppAnnotation: "wc",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "sparkoperator.k8s.io/v1beta2", Kind: "SparkApplication", Name: "wc", UID: app.UID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:     corev1.RestartPolicyNever,
			SchedulerName:     "template-scheduler",
			PriorityClassName: "driver-priority",
			NodeSelector:      map[string]string{"pool": "plain"},
			Containers: []corev1.Container{{
				Name: SparkDriverContainer, Image: "spark:3.5.3",
				Env: []corev1.EnvVar{{Name: "DATASET", Value: "s3://d"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2432Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("2432Mi")},
				},
			}},
		},
	}
	if diff := cmp.Diff(want, pod, quantities); diff != "" {
		t.Errorf("driver pod (-want +got):\n%s", diff)
	}
	if len(appID) != len("spark-")+32 || appID != SparkAppID(app.DeepCopy()) {
		t.Errorf("application id %q is not stable or not spark-<32 hex>", appID)
	}
}

func TestSparkExecutorPod_KeepsTheSlotAndTheTemplatesScheduling(t *testing.T) {
	app := sparkApp(func(a *sparkv1beta2.SparkApplication) {
		a.Spec.Executor = sparkv1beta2.ExecutorSpec{
			SparkPodSpec: sparkv1beta2.SparkPodSpec{
				Cores: ptr(int32(2)), Memory: "3687m", MemoryOverhead: "409m",
				Labels:      map[string]string{"team": "a"},
				Annotations: map[string]string{"slotplane.io/slot-ids": "1,2"},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-01"}}}}},
				}}},
				NodeSelector: map[string]string{"disk": "ssd"},
				Template:     slotTemplate(SparkExecutorContainer),
			},
			Instances: ptr(int32(2)), CoreRequest: "1500m",
		}
	})
	driver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-driver", UID: "driver-uid"}}
	pod, err := SparkExecutorPod(app, driver, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "wc-exec-2" || pod.Spec.Containers[0].Name != SparkExecutorContainer {
		t.Errorf("executor %s with container %s", pod.Name, pod.Spec.Containers[0].Name)
	}
	wantRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi"), "slotplane.io/slot": resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi"), "slotplane.io/slot": resource.MustParse("1")},
	}
	if diff := cmp.Diff(wantRes, pod.Spec.Containers[0].Resources, quantities); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	for k, v := range map[string]string{
		"spark-role": "executor", "spark-exec-id": "2", "spark-app-selector": SparkAppID(app),
		"sparkoperator.k8s.io/app-name": "wc", "team": "a", "slotplane.io/batchjob": "wc", RoleLabel: RoleExecutor,
	} {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	wantAnn := map[string]string{"slotplane.io/slot-ids": "1,2", AppAnnotation: "wc"}
	if diff := cmp.Diff(wantAnn, pod.Annotations); diff != "" {
		t.Errorf("annotations, without the template's simulation ones (-want +got):\n%s", diff)
	}
	s := pod.Spec
	if s.SchedulerName != "slot-scheduler" || s.PriorityClassName != "slotplane-batch" || len(s.Tolerations) != 1 ||
		s.Affinity.NodeAffinity == nil || !cmp.Equal(s.NodeSelector, map[string]string{"zone": "a", "disk": "ssd"}) {
		t.Errorf("scheduling: scheduler %q priority %q tolerations %v affinity %v node selector %v",
			s.SchedulerName, s.PriorityClassName, s.Tolerations, s.Affinity, s.NodeSelector)
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "wc-driver", UID: "driver-uid", Controller: ptr(true)}
	if diff := cmp.Diff([]metav1.OwnerReference{want}, pod.OwnerReferences); diff != "" {
		t.Errorf("owner (-want +got):\n%s", diff)
	}
	if SparkExecutorCount(app) != 2 || SparkExecutorCount(sparkApp()) != 1 {
		t.Errorf("executor counts %d and %d, want 2 and 1", SparkExecutorCount(app), SparkExecutorCount(sparkApp()))
	}
}

func TestSparkDriverPod_RefusesWhatCannotRun(t *testing.T) {
	cases := map[string]func(*sparkv1beta2.SparkApplication){
		"no image":         func(a *sparkv1beta2.SparkApplication) { a.Spec.Image = "" },
		"bad memory":       func(a *sparkv1beta2.SparkApplication) { a.Spec.Driver.Memory = "much" },
		"bad core request": func(a *sparkv1beta2.SparkApplication) { a.Spec.Driver.CoreRequest = "a few" },
		"bad core limit":   func(a *sparkv1beta2.SparkApplication) { a.Spec.Driver.CoreLimit = "x" },
		"duration unreadable": func(a *sparkv1beta2.SparkApplication) {
			a.Annotations = map[string]string{SimDurationAnnotation: "20 seconds"}
		},
		"duration negative": func(a *sparkv1beta2.SparkApplication) {
			a.Annotations = map[string]string{SimDurationAnnotation: "-5s"}
		},
		"outcome unknown": func(a *sparkv1beta2.SparkApplication) {
			a.Annotations = map[string]string{SimDurationAnnotation: "5s", SimOutcomeAnnotation: "failed"}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := SparkDriverPod(sparkApp(change)); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestSparkExecutorStates(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	type states = map[string]sparkv1beta2.ExecutorState
	cases := map[string]struct {
		prev states
		pods []corev1.Pod
		app  sparkv1beta2.ApplicationStateType
		want states
	}{
		"none yet": {app: sparkv1beta2.ApplicationStateSubmitted, want: nil},
		"from the pods": {
			pods: []corev1.Pod{pod("e-1", corev1.PodPending), pod("e-2", corev1.PodRunning), pod("e-3", corev1.PodFailed)},
			app:  sparkv1beta2.ApplicationStateRunning,
			want: states{"e-1": "PENDING", "e-2": "RUNNING", "e-3": "FAILED"},
		},
		"a pod gone while running is unknown": {
			prev: states{"e-1": "RUNNING", "e-2": "RUNNING"},
			pods: []corev1.Pod{pod("e-2", corev1.PodRunning)},
			app:  sparkv1beta2.ApplicationStateRunning,
			want: states{"e-1": "UNKNOWN", "e-2": "RUNNING"},
		},
		"the end completes all but the failed, gone or not": {
			prev: states{"e-1": "RUNNING", "e-2": "RUNNING", "e-3": "FAILED"},
			pods: []corev1.Pod{pod("e-2", corev1.PodRunning)},
			app:  sparkv1beta2.ApplicationStateFailed,
			want: states{"e-1": "COMPLETED", "e-2": "COMPLETED", "e-3": "FAILED"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, sparkExecutorStates(c.prev, c.pods, c.app)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// quantities compares resource quantities by value, not by how they are written.
var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
