package cli

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// The examples, as a user hands them to kubectl, decode into the API's requests.
func TestParseManifests_TheExamples(t *testing.T) {
	var all []manifest
	for _, f := range []string{"../../examples/batchjobs.yaml", "../../examples/scheduling-queue.yaml", "../../examples/scheduling-slots.yaml"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		ms, err := parseManifests(f, data)
		require.NoError(t, err, f)
		all = append(all, ms...)
	}
	require.Len(t, all, 5)
	wc := all[0]
	require.Equal(t, "../../examples/batchjobs.yaml document 1", wc.source)
	require.Equal(t, "default", wc.namespace)
	require.Equal(t, &apitypes.JobRequest{
		Name: "wordcount", Framework: v1alpha1.FrameworkSpark, Queue: "root.analytics", User: "alice",
		Annotations: map[string]string{"slotplane.io/sim-duration": "20s"},
		Application: v1alpha1.Application{Image: "apache/spark:3.5.3", Type: "Scala", MainClass: "org.apache.spark.examples.JavaWordCount",
			MainApplicationFile: "local:///opt/spark/examples/jars/spark-examples_2.12-3.5.3.jar", Arguments: []string{"/data/words.txt"}, Dataset: "file:///data/words.txt"},
		DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}, wc.job)
	require.Equal(t, "clicks", all[1].job.Name)
	require.Equal(t, v1alpha1.FrameworkFlink, all[1].job.Framework)
	require.Equal(t, "report", all[2].job.Name)
	require.Equal(t, &apitypes.SchedulingRequest{Name: "nightly", TestBed: "bed", Mode: v1alpha1.QueueBased,
		Jobs: []v1alpha1.SchedulingJob{{Name: "wordcount", Replication: 3}, {Name: "clicks", Replication: 2}, {Name: "report", Replication: 4}}}, all[3].sched)
	require.Equal(t, []int32{3, 6}, all[4].sched.Jobs[0].SlotIDs)
}

// JSON works as well: one object, an array, or a v1 List.
func TestParseManifests_JSON(t *testing.T) {
	job := `{"apiVersion":"slotplane.io/v1alpha1","kind":"BatchJob","metadata":{"name":"a"},"spec":{"framework":"spark","application":{"image":"i","mainApplicationFile":"f"}}}`
	for name, doc := range map[string]string{
		"object": job,
		"array":  "[" + job + "]",
		"list":   `{"apiVersion":"v1","kind":"List","items":[` + job + `]}`,
	} {
		ms, err := parseManifests("x.json", []byte(doc))
		require.NoError(t, err, name)
		require.Len(t, ms, 1, name)
		require.Equal(t, "a", ms[0].job.Name, name)
	}
}

// A Scheduling's ttlSecondsAfterFinished goes to the API with the rest of its spec.
func TestParseManifests_SchedulingKeepsItsTTL(t *testing.T) {
	doc := `{"apiVersion":"slotplane.io/v1alpha1","kind":"Scheduling","metadata":{"name":"s"},"spec":{"testBed":"bed","mode":"QueueBased","ttlSecondsAfterFinished":600,"jobs":[{"name":"a","replication":1}]}}`
	ms, err := parseManifests("x.json", []byte(doc))
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.NotNil(t, ms[0].sched.TTLSecondsAfterFinished)
	require.EqualValues(t, 600, *ms[0].sched.TTLSecondsAfterFinished)
}
