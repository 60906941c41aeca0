//go:build integration

package crds_test

import (
	"context"
	"fmt"
	"k8s.io/utils/ptr"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
)

// agreement is one object sent to both judges: the Go rules of crds/v1alpha1 and the real
// API server with the CRDs installed. rule names the marker a bad object breaks ("" for a
// good one), so that the table shows which rules it covers.
type agreement struct {
	name string
	rule string
	obj  client.Object
}

// The rules the markers on Scheduling and BatchJob state, each of which the table must break
// at least once. Immutability is left out: it takes an update, not a single object.
var markerRules = []string{
	"metadata.name",
	"scheduling.testBed.minLength", "scheduling.testBed.maxLength", "scheduling.mode.enum", "scheduling.queue.maxLength",
	"scheduling.queue.pattern", "scheduling.user.maxLength", "scheduling.groups.maxItems", "scheduling.groups.items.maxLength",
	"scheduling.jobs.minItems", "scheduling.jobs.maxItems", "scheduling.jobs.slotsSum", "scheduling.jobs.mapKey",
	"scheduling.job.name.minLength", "scheduling.job.name.maxLength", "scheduling.job.replication.min", "scheduling.job.replication.max",
	"scheduling.job.slotIDs.maxItems", "scheduling.job.slotIDs.minimum", "scheduling.job.slotIDs.set",
	"scheduling.slotBased.needsSlotIDs", "scheduling.slotBased.slotIDsPerReplica", "scheduling.queueBased.noSlotIDs",
	"scheduling.ttlSecondsAfterFinished.minimum", "scheduling.ttlSecondsAfterFinished.maximum",
	"batchjob.framework.enum", "batchjob.application.image.minLength", "batchjob.application.image.maxLength",
	"batchjob.application.version.maxLength", "batchjob.application.type.enum", "batchjob.application.type.sparkOnly",
	"batchjob.application.mainClass.maxLength", "batchjob.application.mainApplicationFile.minLength",
	"batchjob.application.mainApplicationFile.maxLength", "batchjob.application.arguments.maxItems",
	"batchjob.application.dataset.maxLength", "batchjob.driverResources.maxProperties", "batchjob.driverResources.positive",
	"batchjob.queue.maxLength", "batchjob.queue.pattern", "batchjob.priority.minimum", "batchjob.priority.maximum",
	"batchjob.user.maxLength", "batchjob.groups.maxItems",
	"batchjob.groups.items.maxLength", "batchjob.sparkApplication.sparkOnly", "batchjob.flinkDeployment.flinkOnly",
	"batchjob.sparkApplication.object",
}

func schedulingCase(edit func(*v1alpha1.Scheduling)) *v1alpha1.Scheduling {
	s := testobjects.Scheduling("nightly").Job("etl", 2).Job("report", 1).Obj()
	if edit != nil {
		edit(s)
	}
	return s
}

func slotSchedulingCase(edit func(*v1alpha1.Scheduling)) *v1alpha1.Scheduling {
	return schedulingCase(func(s *v1alpha1.Scheduling) {
		s.Spec.Mode = v1alpha1.SlotBased
		s.Spec.Jobs = []v1alpha1.SchedulingJob{{Name: "etl", Replication: 2, SlotIDs: []int32{0, 5}}, {Name: "report", Replication: 1, SlotIDs: []int32{0}}}
		if edit != nil {
			edit(s)
		}
	})
}

func jobCase(edit func(*v1alpha1.BatchJob)) *v1alpha1.BatchJob {
	j := &v1alpha1.BatchJob{
		ObjectMeta: metav1.ObjectMeta{Name: "wordcount", Namespace: "default"},
		Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, Application: v1alpha1.Application{
			Image: "apache/spark:3.5.3", MainApplicationFile: "local:///opt/spark/examples/jars/spark-examples.jar",
		}},
	}
	if edit != nil {
		edit(j)
	}
	return j
}

func flinkJobCase(edit func(*v1alpha1.BatchJob)) *v1alpha1.BatchJob {
	return jobCase(func(j *v1alpha1.BatchJob) {
		j.Spec.Framework = v1alpha1.FrameworkFlink
		j.Spec.Application.Image = "flink:1.20"
		if edit != nil {
			edit(j)
		}
	})
}

func nJobs(n int, replication int32) []v1alpha1.SchedulingJob {
	jobs := make([]v1alpha1.SchedulingJob, n)
	for i := range jobs {
		jobs[i] = v1alpha1.SchedulingJob{Name: fmt.Sprintf("job-%d", i), Replication: replication}
	}
	return jobs
}

func nStrings(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// adminGroups makes n groups, one of them (the last) a name of the longest length and the
// others the group the test's client is in. The identity admission policies check each group
// the requester is not in with the authorizer, and a cluster admin's checks of three groups
// already exceed the policy's CEL cost limit: groups of its own keep those policies, which
// are not the subject here, from refusing a good object.
func adminGroups(n int) []string {
	out := nStrings(n, "system:masters")
	out[n-1] = strings.Repeat("g", v1alpha1.MaxNameLength)
	return out
}

func firstSlots(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func nResources(n int) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := range n {
		rl[corev1.ResourceName(fmt.Sprintf("example.com/r%d", i))] = resource.MustParse("1")
	}
	return rl
}

func rawJSON(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func schedulingAgreements() []agreement {
	type S = v1alpha1.Scheduling
	long := func(n int) string { return strings.Repeat("x", n) }
	return []agreement{
		{"queue-based", "", schedulingCase(nil)},
		{"slot-based", "", slotSchedulingCase(nil)},
		{"every optional field at its bound", "", schedulingCase(func(s *S) {
			s.Spec.Queue = "root." + long(v1alpha1.MaxQueueLength-5)
			s.Spec.User = strings.Repeat("é", v1alpha1.MaxNameLength) // 253 characters in 506 bytes
			s.Spec.Groups = adminGroups(v1alpha1.MaxGroups)
			s.Spec.TestBed = strings.Repeat("B", v1alpha1.MaxNameLength)
			s.Spec.Jobs = []v1alpha1.SchedulingJob{{Name: long(v1alpha1.MaxNameLength), Replication: v1alpha1.MaxReplication}}
		})},
		{"job and test bed names that are no DNS names", "", schedulingCase(func(s *S) {
			s.Spec.TestBed, s.Spec.Jobs[0].Name = "Test_Bed", "Nightly ETL"
		})},
		{"a queue of many names", "", schedulingCase(func(s *S) { s.Spec.Queue = "root.a-b_c.D9" })},
		{"a time to live of 0", "", schedulingCase(func(s *S) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](0) })},
		{"a time to live of a year", "", schedulingCase(func(s *S) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](v1alpha1.MaxTTLSecondsAfterFinished) })},
		{"a negative time to live", "scheduling.ttlSecondsAfterFinished.minimum", schedulingCase(func(s *S) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) })},
		{"a time to live over a year", "scheduling.ttlSecondsAfterFinished.maximum", schedulingCase(func(s *S) {
			s.Spec.TTLSecondsAfterFinished = ptr.To[int32](v1alpha1.MaxTTLSecondsAfterFinished + 1)
		})},
		{"the most jobs", "", schedulingCase(func(s *S) { s.Spec.Jobs = nJobs(v1alpha1.MaxSchedulingJobs, 16) })},
		{"the most slots together", "", schedulingCase(func(s *S) {
			s.Spec.Jobs = nJobs(v1alpha1.MaxSchedulingSlots/v1alpha1.MaxReplication, v1alpha1.MaxReplication)
		})},
		{"the most slots of one slot-based job", "", slotSchedulingCase(func(s *S) {
			s.Spec.Jobs = []v1alpha1.SchedulingJob{{Name: "wide", Replication: v1alpha1.MaxReplication, SlotIDs: firstSlots(v1alpha1.MaxReplication)}}
		})},

		{"a name that is no DNS name", "metadata.name", schedulingCase(func(s *S) { s.Name = "Nightly_Run" })},
		{"no test bed", "scheduling.testBed.minLength", schedulingCase(func(s *S) { s.Spec.TestBed = "" })},
		{"a test bed name too long", "scheduling.testBed.maxLength", schedulingCase(func(s *S) { s.Spec.TestBed = long(v1alpha1.MaxNameLength + 1) })},
		{"no mode", "scheduling.mode.enum", schedulingCase(func(s *S) { s.Spec.Mode = "" })},
		{"an unknown mode", "scheduling.mode.enum", schedulingCase(func(s *S) { s.Spec.Mode = "Random" })},
		{"an unknown mode with slots", "scheduling.mode.enum", schedulingCase(func(s *S) {
			s.Spec.Mode, s.Spec.Jobs[0].SlotIDs = "Random", []int32{1}
		})},
		{"a queue with an empty name", "scheduling.queue.pattern", schedulingCase(func(s *S) { s.Spec.Queue = "root..a" })},
		{"a queue with a slash", "scheduling.queue.pattern", schedulingCase(func(s *S) { s.Spec.Queue = "root/a" })},
		{"a queue too long", "scheduling.queue.maxLength", schedulingCase(func(s *S) { s.Spec.Queue = long(v1alpha1.MaxQueueLength + 1) })},
		{"a user name too long", "scheduling.user.maxLength", schedulingCase(func(s *S) { s.Spec.User = strings.Repeat("é", v1alpha1.MaxNameLength+1) })},
		{"too many groups", "scheduling.groups.maxItems", schedulingCase(func(s *S) { s.Spec.Groups = nStrings(v1alpha1.MaxGroups+1, "system:masters") })},
		{"a group name too long", "scheduling.groups.items.maxLength", schedulingCase(func(s *S) {
			s.Spec.Groups = []string{"a", long(v1alpha1.MaxNameLength + 1)}
		})},
		{"no jobs", "scheduling.jobs.minItems", schedulingCase(func(s *S) { s.Spec.Jobs = nil })},
		{"too many jobs", "scheduling.jobs.maxItems", schedulingCase(func(s *S) { s.Spec.Jobs = nJobs(v1alpha1.MaxSchedulingJobs+1, 1) })},
		{"too many slots together", "scheduling.jobs.slotsSum", schedulingCase(func(s *S) {
			s.Spec.Jobs = nJobs(v1alpha1.MaxSchedulingSlots/v1alpha1.MaxReplication+1, v1alpha1.MaxReplication)
		})},
		{"a job listed twice", "scheduling.jobs.mapKey", schedulingCase(func(s *S) { s.Spec.Jobs[1].Name = "etl" })},
		{"a job without a name", "scheduling.job.name.minLength", schedulingCase(func(s *S) { s.Spec.Jobs[1].Name = "" })},
		{"a job name too long", "scheduling.job.name.maxLength", schedulingCase(func(s *S) { s.Spec.Jobs[0].Name = long(v1alpha1.MaxNameLength + 1) })},
		{"zero replication", "scheduling.job.replication.min", schedulingCase(func(s *S) { s.Spec.Jobs[0].Replication = 0 })},
		{"negative replication", "scheduling.job.replication.min", schedulingCase(func(s *S) { s.Spec.Jobs[0].Replication = -3 })},
		{"replication too high", "scheduling.job.replication.max", schedulingCase(func(s *S) { s.Spec.Jobs[0].Replication = v1alpha1.MaxReplication + 1 })},
		{"too many slots for one job", "scheduling.job.slotIDs.maxItems", slotSchedulingCase(func(s *S) {
			s.Spec.Jobs = []v1alpha1.SchedulingJob{{Name: "wide", Replication: v1alpha1.MaxReplication + 1, SlotIDs: firstSlots(v1alpha1.MaxReplication + 1)}}
		})},
		{"a negative slot", "scheduling.job.slotIDs.minimum", slotSchedulingCase(func(s *S) { s.Spec.Jobs[0].SlotIDs = []int32{0, -1} })},
		{"a slot twice", "scheduling.job.slotIDs.set", slotSchedulingCase(func(s *S) { s.Spec.Jobs[0].SlotIDs = []int32{4, 4} })},
		{"a slot-based job without slots", "scheduling.slotBased.needsSlotIDs", slotSchedulingCase(func(s *S) { s.Spec.Jobs[1].SlotIDs = nil })},
		{"a slot-based job with too few slots", "scheduling.slotBased.slotIDsPerReplica", slotSchedulingCase(func(s *S) { s.Spec.Jobs[0].SlotIDs = []int32{3} })},
		{"a slot-based job with too many slots", "scheduling.slotBased.slotIDsPerReplica", slotSchedulingCase(func(s *S) { s.Spec.Jobs[1].SlotIDs = []int32{1, 2} })},
		{"a queue-based job with slots", "scheduling.queueBased.noSlotIDs", schedulingCase(func(s *S) { s.Spec.Jobs[1].SlotIDs = []int32{0} })},
	}
}

func batchJobAgreements() []agreement {
	type J = v1alpha1.BatchJob
	long := func(n int) string { return strings.Repeat("x", n) }
	return []agreement{
		{"spark", "", jobCase(nil)},
		{"flink with its template", "", flinkJobCase(func(j *J) { j.Spec.FlinkDeployment = rawJSON(`{"flinkConfiguration":{"a":"b"}}`) })},
		{"every field at its bound", "", jobCase(func(j *J) {
			j.Spec.Application = v1alpha1.Application{
				Image: long(v1alpha1.MaxImageLength), Version: long(v1alpha1.MaxVersionLength), Type: "Scala",
				MainClass: long(v1alpha1.MaxMainClassLength), MainApplicationFile: long(v1alpha1.MaxLocationLength),
				Arguments: nStrings(v1alpha1.MaxArguments, "x"), Dataset: long(v1alpha1.MaxLocationLength),
			}
			j.Spec.DriverResources = nResources(v1alpha1.MaxDriverResources)
			j.Spec.Queue = "root." + long(v1alpha1.MaxQueueLength-5)
			j.Spec.User, j.Spec.Groups = strings.Repeat("ü", v1alpha1.MaxNameLength), adminGroups(v1alpha1.MaxGroups)
			j.Spec.SparkApplication = rawJSON(`{"sparkConf":{"a":"b"}}`)
		})},
		{"empty templates are left out", "", flinkJobCase(func(j *J) {
			j.Spec.SparkApplication, j.Spec.FlinkDeployment = &runtime.RawExtension{}, rawJSON("null")
		})},
		{"a python job with a tiny driver and a negative duration", "", jobCase(func(j *J) {
			j.Spec.Application.Type = "Python"
			j.Spec.DriverResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1")}
			j.Spec.ExpectedDuration = &metav1.Duration{Duration: -time.Minute}
		})},

		{"a name that is no DNS name", "metadata.name", jobCase(func(j *J) { j.Name = "Word Count" })},
		{"no framework", "batchjob.framework.enum", jobCase(func(j *J) { j.Spec.Framework = "" })},
		{"an unknown framework", "batchjob.framework.enum", jobCase(func(j *J) { j.Spec.Framework = "storm" })},
		{"no image", "batchjob.application.image.minLength", jobCase(func(j *J) { j.Spec.Application.Image = "" })},
		{"an image too long", "batchjob.application.image.maxLength", jobCase(func(j *J) { j.Spec.Application.Image = long(v1alpha1.MaxImageLength + 1) })},
		{"a version too long", "batchjob.application.version.maxLength", jobCase(func(j *J) {
			j.Spec.Application.Version = strings.Repeat("ß", v1alpha1.MaxVersionLength+1)
		})},
		{"an unknown type", "batchjob.application.type.enum", jobCase(func(j *J) { j.Spec.Application.Type = "Go" })},
		{"a type on a flink job", "batchjob.application.type.sparkOnly", flinkJobCase(func(j *J) { j.Spec.Application.Type = "Java" })},
		{"a main class too long", "batchjob.application.mainClass.maxLength", jobCase(func(j *J) {
			j.Spec.Application.MainClass = long(v1alpha1.MaxMainClassLength + 1)
		})},
		{"no file", "batchjob.application.mainApplicationFile.minLength", jobCase(func(j *J) { j.Spec.Application.MainApplicationFile = "" })},
		{"a file too long", "batchjob.application.mainApplicationFile.maxLength", jobCase(func(j *J) {
			j.Spec.Application.MainApplicationFile = long(v1alpha1.MaxLocationLength + 1)
		})},
		{"too many arguments", "batchjob.application.arguments.maxItems", jobCase(func(j *J) {
			j.Spec.Application.Arguments = nStrings(v1alpha1.MaxArguments+1, "x")
		})},
		{"a dataset too long", "batchjob.application.dataset.maxLength", jobCase(func(j *J) {
			j.Spec.Application.Dataset = long(v1alpha1.MaxLocationLength + 1)
		})},
		{"too many driver resources", "batchjob.driverResources.maxProperties", jobCase(func(j *J) {
			j.Spec.DriverResources = nResources(v1alpha1.MaxDriverResources + 1)
		})},
		{"a driver without cpu", "batchjob.driverResources.positive", jobCase(func(j *J) {
			j.Spec.DriverResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		})},
		{"a driver with negative memory", "batchjob.driverResources.positive", jobCase(func(j *J) {
			j.Spec.DriverResources = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Gi")}
		})},
		{"a queue that ends in a dot", "batchjob.queue.pattern", jobCase(func(j *J) { j.Spec.Queue = "root." })},
		{"a queue with a letter outside ASCII", "batchjob.queue.pattern", jobCase(func(j *J) { j.Spec.Queue = "root.anälytics" })},
		{"a queue too long", "batchjob.queue.maxLength", jobCase(func(j *J) { j.Spec.Queue = long(v1alpha1.MaxQueueLength + 1) })},
		{"a priority below the least", "batchjob.priority.minimum", jobCase(func(j *J) { j.Spec.Priority = -v1alpha1.MaxPriority - 1 })},
		{"a priority above the most", "batchjob.priority.maximum", jobCase(func(j *J) { j.Spec.Priority = v1alpha1.MaxPriority + 1 })},
		{"the highest priority", "", jobCase(func(j *J) { j.Spec.Priority = v1alpha1.MaxPriority })},
		{"a user name too long", "batchjob.user.maxLength", jobCase(func(j *J) { j.Spec.User = long(v1alpha1.MaxNameLength + 1) })},
		{"too many groups", "batchjob.groups.maxItems", jobCase(func(j *J) { j.Spec.Groups = nStrings(v1alpha1.MaxGroups+1, "system:masters") })},
		{"a group name too long", "batchjob.groups.items.maxLength", jobCase(func(j *J) { j.Spec.Groups = []string{long(v1alpha1.MaxNameLength + 1)} })},
		{"a spark template on a flink job", "batchjob.sparkApplication.sparkOnly", flinkJobCase(func(j *J) { j.Spec.SparkApplication = rawJSON(`{}`) })},
		{"a flink template on a spark job", "batchjob.flinkDeployment.flinkOnly", jobCase(func(j *J) { j.Spec.FlinkDeployment = rawJSON(`{"job":{}}`) })},
		{"a template that is a list", "batchjob.sparkApplication.object", jobCase(func(j *J) { j.Spec.SparkApplication = rawJSON(`[1, 2]`) })},
	}
}

// goVerdict is what crds/v1alpha1 says of an object.
func goVerdict(obj client.Object) field.ErrorList {
	switch o := obj.(type) {
	case *v1alpha1.Scheduling:
		return v1alpha1.ValidateScheduling(o)
	case *v1alpha1.BatchJob:
		return v1alpha1.ValidateBatchJob(o)
	}
	panic(fmt.Sprintf("no Go rules for %T", obj))
}

// TestValidation_GoAgreesWithTheAPIServer sends every object of the table to a real API
// server as a server-side dry run (checked by the schema, its CEL rules and the admission
// policies, stored nowhere) and requires the same verdict from the Go rules.
func TestValidation_GoAgreesWithTheAPIServer(t *testing.T) {
	schedulings, jobs := schedulingAgreements(), batchJobAgreements()
	// The table keeps its breadth: enough objects of each kind, good and bad, and every
	// rule the markers state broken at least once.
	for kind, table := range map[string][]agreement{"Scheduling": schedulings, "BatchJob": jobs} {
		good, bad := 0, 0
		for _, a := range table {
			if a.rule == "" {
				good++
			} else {
				bad++
			}
		}
		require.GreaterOrEqual(t, len(table), 12, kind)
		require.GreaterOrEqual(t, good, 4, kind)
		require.GreaterOrEqual(t, bad, 4, kind)
	}
	all := slices.Concat(schedulings, jobs)
	require.GreaterOrEqual(t, len(all), 30)
	broken := map[string]bool{}
	for _, a := range all {
		broken[a.rule] = true
	}
	for _, rule := range markerRules {
		require.True(t, broken[rule], "no object of the table breaks the rule %s", rule)
	}

	c := localcluster.New(t, localcluster.Options{})
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := context.Background()

	for _, a := range all {
		t.Run(fmt.Sprintf("%T/%s", a.obj, a.name), func(t *testing.T) {
			goErrs := goVerdict(a.obj)
			// The client writes the answer into the object it sends: send a copy.
			err := cl.Create(ctx, a.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			// Only the schema and its CEL rules are the subject: a refusal by anything else
			// (an admission policy, an unreachable server) would make agreement meaningless.
			if err != nil && (!apierrors.IsInvalid(err) || strings.Contains(err.Error(), "ValidatingAdmissionPolicy")) {
				t.Fatalf("the API server refused for a reason other than the CRD's rules: %v", err)
			}
			goOK, serverOK := len(goErrs) == 0, err == nil
			require.Equal(t, serverOK, goOK, "the API server says %v; the Go rules say %v", err, goErrs)
			// And the table says the same as both: a good object is one that breaks no rule.
			require.Equal(t, a.rule == "", goOK, "the table expects a breach of %q; the Go rules say %v", a.rule, goErrs)
		})
	}
	t.Logf("%d objects (%d Schedulings, %d BatchJobs) judged alike by the Go rules and the API server", len(all), len(schedulings), len(jobs))
}
