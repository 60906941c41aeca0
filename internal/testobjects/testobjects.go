// Package testobjects builds slotplane's objects for tests one setting at a time, so a test
// names only what matters to it: testobjects.BatchJob("wordcount").Flink().RunFor("2s").Obj().
// Everything else has a plain, valid default.
package testobjects

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/appsim"
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

// RunFor is how long the operators' stand-in runs the job (appsim.SimDurationAnnotation).
func (w *BatchJobWrapper) RunFor(d string) *BatchJobWrapper {
	return w.Annotation(appsim.SimDurationAnnotation, d)
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
