package operatorapp

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/testobjects"
)

func job(framework v1alpha1.Framework) *v1alpha1.BatchJob {
	return testobjects.BatchJob("wordcount").Namespace("team-a").Framework(framework).
		Annotation("kubectl.kubernetes.io/last-applied-configuration", "{}").Annotation(v1alpha1.SchedulerDataPrefix+"estimate", "20s").RunFor("20s").
		Image("registry/wordcount:1").MainClass("org.example.WordCount").Arguments("--in", "x").Dataset("hdfs://data/words").
		Driver("500m", "2Gi").Obj()
}

func run(framework v1alpha1.Framework) Run {
	return Run{
		Job:      job(framework),
		Request:  v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{5, 3}, Run: 2},
		SlotSize: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		Nodes:    []string{"node-1", "node-0"},
	}
}

func TestSparkExecutorsFitTheirSlots(t *testing.T) {
	app, err := Spark(run(v1alpha1.FrameworkSpark))
	if err != nil {
		t.Fatal(err)
	}
	if app.Name != Name("wordcount", "nightly", 2) || !strings.HasPrefix(app.Name, "wordcount-") || !strings.HasSuffix(app.Name, "-r2") || app.Namespace != "team-a" {
		t.Errorf("name %s/%s", app.Namespace, app.Name)
	}
	if _, ok := app.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Error("kubectl's bookkeeping was copied")
	}
	if _, ok := app.Annotations[v1alpha1.SchedulerDataPrefix+"estimate"]; ok {
		t.Error("the schedulers' notes were copied")
	}
	if app.Annotations["slotplane.io/sim-duration"] != "20s" {
		t.Error("the job's own annotations were not carried along")
	}
	e := app.Spec.Executor
	if *e.Instances != 2 {
		t.Errorf("instances %d, want one per slot", *e.Instances)
	}
	// 4 GiB slot: 3687m heap + 409m overhead = 4096 MiB, what Spark will request.
	if e.Memory != "3687m" || e.MemoryOverhead != "409m" {
		t.Errorf("memory %s + overhead %s, want 3687m + 409m", e.Memory, e.MemoryOverhead)
	}
	if *e.Cores != 2 || e.CoreRequest != "1500m" || e.CoreLimit != "1500m" {
		t.Errorf("cores %d request %s limit %s", *e.Cores, e.CoreRequest, e.CoreLimit)
	}
	if e.SchedulerName != v1alpha1.SlotSchedulerName || e.PriorityClassName != v1alpha1.BatchPriorityClass {
		t.Errorf("scheduler %q priority %q", e.SchedulerName, e.PriorityClassName)
	}
	if e.Annotations[v1alpha1.SlotIDsAnnotation] != "5,3" {
		t.Errorf("slot ids %q, want the request's order 5,3", e.Annotations[v1alpha1.SlotIDsAnnotation])
	}
	if e.Labels[v1alpha1.TestBedLabel] != "bed" || e.Labels[v1alpha1.BatchJobLabel] != "wordcount" {
		t.Errorf("executor labels %v", e.Labels)
	}
	var nodes []string
	for _, term := range e.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		nodes = append(nodes, term.MatchFields[0].Values...)
	}
	if diff := cmp.Diff([]string{"node-0", "node-1"}, nodes); diff != "" {
		t.Errorf("affinity nodes (-want +got)\n%s", diff)
	}
	slot := e.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceName(v1alpha1.SlotResource)]
	if e.Template.Spec.Containers[0].Name != SparkExecutorContainer || slot.Value() != 1 {
		t.Errorf("template container %s asks for %s slots", e.Template.Spec.Containers[0].Name, slot.String())
	}
	if len(e.Tolerations) != 1 || e.Tolerations[0].Key != v1alpha1.TestBedTaint {
		t.Errorf("tolerations %v", e.Tolerations)
	}
	if e.Env[0].Name != DatasetEnv || e.Env[0].Value != "hdfs://data/words" {
		t.Errorf("executor env %v", e.Env)
	}
	d := app.Spec.Driver
	if d.SchedulerName != "" || d.CoreRequest != "500m" || d.Memory != "1664m" || d.MemoryOverhead != "384m" {
		t.Errorf("driver: scheduler %q, cores %s, memory %s + %s", d.SchedulerName, d.CoreRequest, d.Memory, d.MemoryOverhead)
	}
	if app.Spec.SparkVersion != DefaultSparkVersion || app.Spec.Type != "Scala" || app.Spec.RestartPolicy.Type != "Never" {
		t.Errorf("version %s type %s restart %s", app.Spec.SparkVersion, app.Spec.Type, app.Spec.RestartPolicy.Type)
	}
}

func TestSparkStartsFromTheJobsSpecAndOverwritesPlacement(t *testing.T) {
	r := run(v1alpha1.FrameworkSpark)
	r.Job.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{
		"sparkConf": {"spark.sql.shuffle.partitions": "8"},
		"dynamicAllocation": {"enabled": true},
		"executor": {"instances": 40, "schedulerName": "volcano", "labels": {"team": "a"}}
	}`)}
	app, err := Spark(r)
	if err != nil {
		t.Fatal(err)
	}
	if app.Spec.SparkConf["spark.sql.shuffle.partitions"] != "8" {
		t.Error("the job's sparkConf was lost")
	}
	if app.Spec.DynamicAllocation != nil {
		t.Error("dynamic allocation would change the executor count behind the slots")
	}
	e := app.Spec.Executor
	if *e.Instances != 2 || e.SchedulerName != v1alpha1.SlotSchedulerName || e.Labels["team"] != "a" {
		t.Errorf("instances %d scheduler %s labels %v", *e.Instances, e.SchedulerName, e.Labels)
	}
}

func TestFlinkTaskManagersFitTheirSlots(t *testing.T) {
	dep, err := Flink(run(v1alpha1.FrameworkFlink))
	if err != nil {
		t.Fatal(err)
	}
	tm := dep.Spec.TaskManager
	if *tm.Replicas != 2 || *tm.Resource.CPU != 1.5 || tm.Resource.Memory != "4096m" {
		t.Errorf("taskmanagers %d x cpu %v memory %s", *tm.Replicas, *tm.Resource.CPU, tm.Resource.Memory)
	}
	p := tm.PodTemplate
	if p.Spec.SchedulerName != v1alpha1.SlotSchedulerName || p.Annotations[v1alpha1.SlotIDsAnnotation] != "5,3" || p.Spec.Containers[0].Name != FlinkMainContainer {
		t.Errorf("pod template %+v", p)
	}
	if dep.Spec.Job.Parallelism != 2 || dep.Spec.Job.JarURI != "local:///opt/app.jar" || dep.Spec.Job.EntryClass != "org.example.WordCount" {
		t.Errorf("job %+v", dep.Spec.Job)
	}
	if dep.Spec.FlinkConfiguration["taskmanager.numberOfTaskSlots"] != "1" {
		t.Error("a TaskManager must hold one task slot")
	}
	if *dep.Spec.JobManager.Resource.CPU != 0.5 || dep.Spec.JobManager.Resource.Memory != "2048m" {
		t.Errorf("jobmanager %v %s", *dep.Spec.JobManager.Resource.CPU, dep.Spec.JobManager.Resource.Memory)
	}
}

func TestBadRunsAreRefused(t *testing.T) {
	cases := map[string]func(*Run){
		"no slots":          func(r *Run) { r.Request.Slots = nil },
		"no nodes":          func(r *Run) { r.Nodes = nil },
		"slot without cpu":  func(r *Run) { delete(r.SlotSize, corev1.ResourceCPU) },
		"slot too small":    func(r *Run) { r.SlotSize[corev1.ResourceMemory] = resource.MustParse("400Mi") },
		"wrong framework":   func(r *Run) { r.Job.Spec.Framework = v1alpha1.FrameworkFlink },
		"broken spark spec": func(r *Run) { r.Job.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{"executor": 3}`)} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			r := run(v1alpha1.FrameworkSpark)
			mutate(&r)
			_, err := Spark(r)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
}

func TestNameLeavesRoomForPodNames(t *testing.T) {
	long := strings.Repeat("a", 60)
	if got := Name(long, "s", 12); len(got) > 40 || !strings.HasSuffix(got, "-r12") {
		t.Errorf("Name = %q", got)
	}
	if a, b := Name("job", "nightly", 1), Name("job", "pinned", 1); a == b || len(a) != len("job-12345-r1") {
		t.Errorf("two Schedulings' first runs share a name or the form is off: %q %q", a, b)
	}
}

// forged are keys a job might write to pass its pods off as placed by slotplane.
const forged = `"slotplane.io/slot-id": "0", "slotplane.io/testbed": "other", "standin.slotplane.io/role": "driver", "team": "a"`

// A job's wrapped spec cannot put slotplane's keys on its pods; its own keys pass, and
// slotplane's own values are the ones that stand.
func TestSpark_JobCannotWriteSlotplaneKeysOnItsPods(t *testing.T) {
	r := run(v1alpha1.FrameworkSpark)
	r.Job.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{
		"sparkConf": {
			"spark.kubernetes.executor.label.slotplane.io/slot-id": "0",
			"spark.kubernetes.executor.annotation.slotplane.io/slot-claim": "0/x",
			"spark.kubernetes.driver.label.slotplane.io/batchjob": "other",
			"spark.kubernetes.driver.annotation.slotplane.io/slot-ids": "0",
			"spark.kubernetes.executor.label.team": "a",
			"spark.sql.shuffle.partitions": "8"
		},
		"driver": {
			"labels": {` + forged + `},
			"annotations": {` + forged + `, "slotplane.io/slot-claim": "0/x"},
			"template": {"metadata": {"labels": {` + forged + `}, "annotations": {` + forged + `}}}
		},
		"executor": {
			"labels": {` + forged + `},
			"annotations": {` + forged + `, "slotplane.io/slot-ids": "0", "slotplane.io/slot-claim": "0/x"}
		}
	}`)}
	app, err := Spark(r)
	if err != nil {
		t.Fatal(err)
	}
	s := app.Spec
	wantConf := map[string]string{"spark.kubernetes.executor.label.team": "a", "spark.sql.shuffle.partitions": "8"}
	if diff := cmp.Diff(wantConf, s.SparkConf); diff != "" {
		t.Errorf("sparkConf (-want +got)\n%s", diff)
	}
	wantDriverLabels := map[string]string{"team": "a", v1alpha1.BatchJobLabel: "wordcount"}
	if diff := cmp.Diff(wantDriverLabels, s.Driver.Labels); diff != "" {
		t.Errorf("driver labels (-want +got)\n%s", diff)
	}
	for what, got := range map[string]map[string]string{
		"driver annotations":          s.Driver.Annotations,
		"driver template labels":      s.Driver.Template.Labels,
		"driver template annotations": s.Driver.Template.Annotations,
	} {
		if diff := cmp.Diff(map[string]string{"team": "a"}, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", what, diff)
		}
	}
	wantExecLabels := map[string]string{
		"team": "a", v1alpha1.BatchJobLabel: "wordcount", v1alpha1.TestBedLabel: "bed", v1alpha1.ActiveSchedulingLabel: "nightly",
	}
	if diff := cmp.Diff(wantExecLabels, s.Executor.Labels); diff != "" {
		t.Errorf("executor labels (-want +got)\n%s", diff)
	}
	wantExecAnnotations := map[string]string{"team": "a", v1alpha1.SlotIDsAnnotation: "5,3"}
	if diff := cmp.Diff(wantExecAnnotations, s.Executor.Annotations); diff != "" {
		t.Errorf("executor annotations (-want +got)\n%s", diff)
	}
}

func TestFlink_JobCannotWriteSlotplaneKeysOnItsPods(t *testing.T) {
	r := run(v1alpha1.FrameworkFlink)
	r.Job.Spec.FlinkDeployment = &runtime.RawExtension{Raw: []byte(`{
		"flinkConfiguration": {
			"kubernetes.taskmanager.labels": "slotplane.io/slot-id:0, team:a",
			"kubernetes.taskmanager.annotations": "slotplane.io/slot-claim:0/x",
			"kubernetes.jobmanager.labels": "team:a,standin.slotplane.io/role:taskmanager",
			"state.backend.type": "hashmap"
		},
		"podTemplate": {"metadata": {"labels": {` + forged + `}, "annotations": {` + forged + `, "slotplane.io/slot-claim": "0/x"}}},
		"jobManager": {"podTemplate": {"metadata": {"labels": {` + forged + `}, "annotations": {` + forged + `}}}},
		"taskManager": {"podTemplate": {"metadata": {"labels": {` + forged + `}}}}
	}`)}
	dep, err := Flink(r)
	if err != nil {
		t.Fatal(err)
	}
	s := dep.Spec
	wantConf := map[string]string{
		"kubernetes.taskmanager.labels":               " team:a",
		"kubernetes.jobmanager.labels":                "team:a",
		"state.backend.type":                          "hashmap",
		"taskmanager.numberOfTaskSlots":               "1",
		"containerized.master.env." + DatasetEnv:      "hdfs://data/words",
		"containerized.taskmanager.env." + DatasetEnv: "hdfs://data/words",
	}
	if diff := cmp.Diff(wantConf, map[string]string(s.FlinkConfiguration)); diff != "" {
		t.Errorf("flinkConfiguration (-want +got)\n%s", diff)
	}
	// The base template reaches every pod, TaskManagers included.
	if diff := cmp.Diff(map[string]string{"team": "a", v1alpha1.BatchJobLabel: "wordcount"}, s.PodTemplate.Labels); diff != "" {
		t.Errorf("pod template labels (-want +got)\n%s", diff)
	}
	for what, got := range map[string]map[string]string{
		"pod template annotations":            s.PodTemplate.Annotations,
		"jobmanager pod template labels":      s.JobManager.PodTemplate.Labels,
		"jobmanager pod template annotations": s.JobManager.PodTemplate.Annotations,
	} {
		if diff := cmp.Diff(map[string]string{"team": "a"}, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", what, diff)
		}
	}
	wantTM := map[string]string{v1alpha1.BatchJobLabel: "wordcount", v1alpha1.TestBedLabel: "bed", v1alpha1.ActiveSchedulingLabel: "nightly"}
	if diff := cmp.Diff(wantTM, s.TaskManager.PodTemplate.Labels); diff != "" {
		t.Errorf("taskmanager pod template labels (-want +got)\n%s", diff)
	}
}
