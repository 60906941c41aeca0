// Package testobjects builds slotplane's objects for tests one setting at a time, so a test
// names only what matters to it: testobjects.BatchJob("wordcount").Flink().RunFor("2s").Obj().
// Everything else has a plain, valid default.
package testobjects

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/standin"
)

// Namespace is where the objects are made unless a test says otherwise.
const Namespace = "default"

// BatchJobWrapper builds a BatchJob.
type BatchJobWrapper struct{ job v1alpha1.BatchJob }

// BatchJob is a Spark job in Namespace with an image and main class named after it and a
// driver of 1 CPU and 2 GiB.
func BatchJob(name string) *BatchJobWrapper {
	return &BatchJobWrapper{job: v1alpha1.BatchJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: v1alpha1.BatchJobSpec{
			Framework: v1alpha1.FrameworkSpark,
			Application: v1alpha1.Application{
				Image: "registry.example/" + name + ":1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar",
			},
			DriverResources: resources("1", "2Gi"),
		},
	}}
}

// Obj is the BatchJob built so far (a copy: the wrapper can go on building).
func (w *BatchJobWrapper) Obj() *v1alpha1.BatchJob { return w.job.DeepCopy() }

// Namespace puts the job in ns.
func (w *BatchJobWrapper) Namespace(ns string) *BatchJobWrapper {
	w.job.Namespace = ns
	return w
}

// Framework sets the job's framework.
func (w *BatchJobWrapper) Framework(f v1alpha1.Framework) *BatchJobWrapper {
	w.job.Spec.Framework = f
	return w
}

// Flink makes it a Flink job.
func (w *BatchJobWrapper) Flink() *BatchJobWrapper { return w.Framework(v1alpha1.FrameworkFlink) }

// RunFor is how long the operators' stand-in runs the job (standin.SimDurationAnnotation).
func (w *BatchJobWrapper) RunFor(d string) *BatchJobWrapper {
	return w.Annotation(standin.SimDurationAnnotation, d)
}

// Annotation sets one annotation.
func (w *BatchJobWrapper) Annotation(key, value string) *BatchJobWrapper {
	if w.job.Annotations == nil {
		w.job.Annotations = map[string]string{}
	}
	w.job.Annotations[key] = value
	return w
}

// Image sets the application's image.
func (w *BatchJobWrapper) Image(image string) *BatchJobWrapper {
	w.job.Spec.Application.Image = image
	return w
}

// MainClass sets the application's main class ("" for none).
func (w *BatchJobWrapper) MainClass(class string) *BatchJobWrapper {
	w.job.Spec.Application.MainClass = class
	return w
}

// Arguments sets the application's arguments.
func (w *BatchJobWrapper) Arguments(args ...string) *BatchJobWrapper {
	w.job.Spec.Application.Arguments = args
	return w
}

// Dataset sets the dataset the job reads.
func (w *BatchJobWrapper) Dataset(uri string) *BatchJobWrapper {
	w.job.Spec.Application.Dataset = uri
	return w
}

// Driver sets the driver's (or JobManager's) CPU and memory.
func (w *BatchJobWrapper) Driver(cpu, memory string) *BatchJobWrapper {
	w.job.Spec.DriverResources = resources(cpu, memory)
	return w
}

// Queue names the queue the job asks for.
func (w *BatchJobWrapper) Queue(q string) *BatchJobWrapper {
	w.job.Spec.Queue = q
	return w
}

func resources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

// SuspendedOutcome sets how a run ends whose application is suspended.
func (w *BatchJobWrapper) SuspendedOutcome(o v1alpha1.RunOutcome) *BatchJobWrapper {
	w.job.Spec.SuspendedOutcome = o
	return w
}

// TestBedWrapper builds a TestBed.
type TestBedWrapper struct{ bed v1alpha1.TestBed }

// TestBed is a test bed in Namespace on the nodes labelled slotplane.io/node, two slots of 1
// CPU and 1 GiB on each.
func TestBed(name string) *TestBedWrapper {
	return &TestBedWrapper{bed: v1alpha1.TestBed{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec:       v1alpha1.TestBedSpec{NodeLabel: "slotplane.io/node", SlotsPerNode: 2, ResourcesPerSlot: resources("1", "1Gi")},
	}}
}

// Obj is the TestBed built so far (a copy).
func (w *TestBedWrapper) Obj() *v1alpha1.TestBed { return w.bed.DeepCopy() }

// Namespace puts the bed in ns.
func (w *TestBedWrapper) Namespace(ns string) *TestBedWrapper {
	w.bed.Namespace = ns
	return w
}

// NodeLabel puts the bed on the nodes that carry label.
func (w *TestBedWrapper) NodeLabel(label string) *TestBedWrapper {
	w.bed.Spec.NodeLabel = label
	return w
}

// Slots gives each node perNode slots of cpu and memory.
func (w *TestBedWrapper) Slots(perNode int32, cpu, memory string) *TestBedWrapper {
	w.bed.Spec.SlotsPerNode, w.bed.Spec.ResourcesPerSlot = perNode, resources(cpu, memory)
	return w
}

// UID sets the bed's UID, which a fake client keeps as given (an API server sets its own).
func (w *TestBedWrapper) UID(uid types.UID) *TestBedWrapper {
	w.bed.UID = uid
	return w
}

// Generation sets the bed's generation, which a fake client keeps as given.
func (w *TestBedWrapper) Generation(g int64) *TestBedWrapper {
	w.bed.Generation = g
	return w
}

// SchedulingWrapper builds a Scheduling.
type SchedulingWrapper struct{ s v1alpha1.Scheduling }

// Scheduling is a QueueBased Scheduling in Namespace on the test bed "bed", with no jobs.
func Scheduling(name string) *SchedulingWrapper {
	return &SchedulingWrapper{s: v1alpha1.Scheduling{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec:       v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased},
	}}
}

// Obj is the Scheduling built so far (a copy).
func (w *SchedulingWrapper) Obj() *v1alpha1.Scheduling { return w.s.DeepCopy() }

// Namespace puts the Scheduling in ns.
func (w *SchedulingWrapper) Namespace(ns string) *SchedulingWrapper {
	w.s.Namespace = ns
	return w
}

// TestBed names its test bed.
func (w *SchedulingWrapper) TestBed(bed string) *SchedulingWrapper {
	w.s.Spec.TestBed = bed
	return w
}

// Queue names the queue its jobs ask for unless they name one.
func (w *SchedulingWrapper) Queue(q string) *SchedulingWrapper {
	w.s.Spec.Queue = q
	return w
}

// User names the user it runs as.
func (w *SchedulingWrapper) User(user string) *SchedulingWrapper {
	w.s.Spec.User = user
	return w
}

// Groups names the groups it runs with.
func (w *SchedulingWrapper) Groups(groups ...string) *SchedulingWrapper {
	w.s.Spec.Groups = groups
	return w
}

// Job appends a job of replication slots (QueueBased).
func (w *SchedulingWrapper) Job(name string, replication int32) *SchedulingWrapper {
	w.s.Spec.Jobs = append(w.s.Spec.Jobs, v1alpha1.SchedulingJob{Name: name, Replication: replication})
	return w
}

// SlotJob makes the Scheduling SlotBased and appends a job in the slots ids.
func (w *SchedulingWrapper) SlotJob(name string, ids ...int32) *SchedulingWrapper {
	w.s.Spec.Mode = v1alpha1.SlotBased
	w.s.Spec.Jobs = append(w.s.Spec.Jobs, v1alpha1.SchedulingJob{Name: name, Replication: int32(len(ids)), SlotIDs: ids})
	return w
}

// Priority sets the job's priority.
func (w *BatchJobWrapper) Priority(p int32) *BatchJobWrapper {
	w.job.Spec.Priority = p
	return w
}
