package v1alpha1

import (
	"fmt"
	"k8s.io/utils/ptr"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// describe renders errors as "path: type", the part of them the tests pin down exactly.
func describe(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s", e.Field, e.Type))
	}
	return out
}

func queueScheduling(edit func(*Scheduling)) *Scheduling {
	s := &Scheduling{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
		Spec:       SchedulingSpec{TestBed: "bed", Mode: QueueBased, Jobs: []SchedulingJob{{Name: "etl", Replication: 2}}},
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func slotScheduling(edit func(*Scheduling)) *Scheduling {
	return queueScheduling(func(s *Scheduling) {
		s.Spec.Mode = SlotBased
		s.Spec.Jobs = []SchedulingJob{{Name: "etl", Replication: 2, SlotIDs: []int32{0, 5}}, {Name: "report", Replication: 1, SlotIDs: []int32{0}}}
		if edit != nil {
			edit(s)
		}
	})
}

// manyJobs makes n jobs named job-0, job-1, ... of the given replication.
func manyJobs(n int, replication int32) []SchedulingJob {
	jobs := make([]SchedulingJob, n)
	for i := range jobs {
		jobs[i] = SchedulingJob{Name: fmt.Sprintf("job-%d", i), Replication: replication}
	}
	return jobs
}

func manyStrings(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// slots makes the slot ids 0..n-1.
func slots(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

func TestValidateScheduling(t *testing.T) {
	cases := map[string]struct {
		obj  *Scheduling
		want []string
	}{
		"queue-based": {queueScheduling(nil), nil},
		"slot-based":  {slotScheduling(nil), nil},
		"every optional field at its bound": {queueScheduling(func(s *Scheduling) {
			s.Spec.Queue = "root." + strings.Repeat("q", MaxQueueLength-5)
			s.Spec.User = strings.Repeat("é", MaxNameLength) // 253 characters, 506 bytes
			s.Spec.Groups = manyStrings(MaxGroups, strings.Repeat("g", MaxNameLength))
			s.Spec.TestBed = strings.Repeat("B", MaxNameLength) // not a DNS name: the schema does not ask for one
			s.Spec.Jobs = []SchedulingJob{{Name: strings.Repeat("j", MaxNameLength), Replication: MaxReplication}}
		}), nil},
		"a time to live of 0":      {queueScheduling(func(s *Scheduling) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](0) }), nil},
		"a time to live of a year": {queueScheduling(func(s *Scheduling) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](MaxTTLSecondsAfterFinished) }), nil},
		"a negative time to live": {queueScheduling(func(s *Scheduling) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) }),
			[]string{"spec.ttlSecondsAfterFinished: Invalid value"}},
		"a time to live over a year": {queueScheduling(func(s *Scheduling) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](MaxTTLSecondsAfterFinished + 1) }),
			[]string{"spec.ttlSecondsAfterFinished: Invalid value"}},
		"the most jobs": {queueScheduling(func(s *Scheduling) { s.Spec.Jobs = manyJobs(MaxSchedulingJobs, 16) }), nil},
		"the most slots": {queueScheduling(func(s *Scheduling) {
			s.Spec.Jobs = manyJobs(MaxSchedulingSlots/MaxReplication, MaxReplication)
		}), nil},
		"the most slots of a slot-based job": {slotScheduling(func(s *Scheduling) {
			s.Spec.Jobs = []SchedulingJob{{Name: "wide", Replication: MaxReplication, SlotIDs: slots(MaxReplication)}}
		}), nil},

		"a name that is no DNS name": {queueScheduling(func(s *Scheduling) { s.Name = "Nightly_Run" }), []string{"metadata.name: Invalid value"}},
		"no namespace":               {queueScheduling(func(s *Scheduling) { s.Namespace = "" }), []string{"metadata.namespace: Required value"}},
		"no test bed":                {queueScheduling(func(s *Scheduling) { s.Spec.TestBed = "" }), []string{"spec.testBed: Required value"}},
		"a test bed name too long": {queueScheduling(func(s *Scheduling) { s.Spec.TestBed = strings.Repeat("b", MaxNameLength+1) }),
			[]string{"spec.testBed: Too long"}},
		"no mode":      {queueScheduling(func(s *Scheduling) { s.Spec.Mode = "" }), []string{"spec.mode: Required value"}},
		"unknown mode": {queueScheduling(func(s *Scheduling) { s.Spec.Mode = "Random" }), []string{"spec.mode: Unsupported value"}},
		"an unknown mode skips the rules of the modes": {queueScheduling(func(s *Scheduling) {
			s.Spec.Mode = "Random"
			s.Spec.Jobs[0].SlotIDs = []int32{1}
		}), []string{"spec.mode: Unsupported value"}},
		"a queue with an empty name": {queueScheduling(func(s *Scheduling) { s.Spec.Queue = "root..a" }), []string{"spec.queue: Invalid value"}},
		"a queue with a space":       {queueScheduling(func(s *Scheduling) { s.Spec.Queue = "root.a b" }), []string{"spec.queue: Invalid value"}},
		"a queue too long": {queueScheduling(func(s *Scheduling) { s.Spec.Queue = strings.Repeat("q", MaxQueueLength+1) }),
			[]string{"spec.queue: Too long"}},
		"a user name too long": {queueScheduling(func(s *Scheduling) { s.Spec.User = strings.Repeat("u", MaxNameLength+1) }),
			[]string{"spec.user: Too long"}},
		"too many groups": {queueScheduling(func(s *Scheduling) { s.Spec.Groups = manyStrings(MaxGroups+1, "g") }),
			[]string{"spec.groups: Too many"}},
		"a group name too long": {queueScheduling(func(s *Scheduling) { s.Spec.Groups = []string{"a", "b", strings.Repeat("g", MaxNameLength+1)} }),
			[]string{"spec.groups[2]: Too long"}},

		"no jobs":       {queueScheduling(func(s *Scheduling) { s.Spec.Jobs = nil }), []string{"spec.jobs: Required value"}},
		"too many jobs": {queueScheduling(func(s *Scheduling) { s.Spec.Jobs = manyJobs(MaxSchedulingJobs+1, 1) }), []string{"spec.jobs: Too many"}},
		"too many slots together": {queueScheduling(func(s *Scheduling) {
			s.Spec.Jobs = manyJobs(MaxSchedulingSlots/MaxReplication+1, MaxReplication)
		}), []string{"spec.jobs: Invalid value"}},
		"a job listed twice": {queueScheduling(func(s *Scheduling) {
			s.Spec.Jobs = []SchedulingJob{{Name: "etl", Replication: 1}, {Name: "report", Replication: 1}, {Name: "etl", Replication: 2}}
		}), []string{"spec.jobs[2].name: Duplicate value"}},
		"a job without a name": {queueScheduling(func(s *Scheduling) { s.Spec.Jobs[0].Name = "" }), []string{"spec.jobs[0].name: Required value"}},
		"a job name too long": {queueScheduling(func(s *Scheduling) { s.Spec.Jobs[0].Name = strings.Repeat("j", MaxNameLength+1) }),
			[]string{"spec.jobs[0].name: Too long"}},
		"zero replication":     {queueScheduling(func(s *Scheduling) { s.Spec.Jobs[0].Replication = 0 }), []string{"spec.jobs[0].replication: Invalid value"}},
		"negative replication": {queueScheduling(func(s *Scheduling) { s.Spec.Jobs[0].Replication = -3 }), []string{"spec.jobs[0].replication: Invalid value"}},
		"replication too high": {queueScheduling(func(s *Scheduling) { s.Spec.Jobs[0].Replication = MaxReplication + 1 }),
			[]string{"spec.jobs[0].replication: Invalid value"}},
		"a slot-based job without slots": {slotScheduling(func(s *Scheduling) { s.Spec.Jobs[1].SlotIDs = nil }),
			[]string{"spec.jobs[1].slotIDs: Required value"}},
		"a slot-based job with too few slots": {slotScheduling(func(s *Scheduling) { s.Spec.Jobs[0].SlotIDs = []int32{3} }),
			[]string{"spec.jobs[0].slotIDs: Invalid value"}},
		"a queue-based job with slots": {queueScheduling(func(s *Scheduling) { s.Spec.Jobs[0].SlotIDs = []int32{0, 1} }),
			[]string{"spec.jobs[0].slotIDs: Forbidden"}},
		"a negative slot": {slotScheduling(func(s *Scheduling) { s.Spec.Jobs[0].SlotIDs = []int32{0, -1} }),
			[]string{"spec.jobs[0].slotIDs[1]: Invalid value"}},
		"a slot twice": {slotScheduling(func(s *Scheduling) { s.Spec.Jobs[0].SlotIDs = []int32{4, 4} }),
			[]string{"spec.jobs[0].slotIDs[1]: Duplicate value"}},
		"too many slots for a job": {slotScheduling(func(s *Scheduling) {
			s.Spec.Jobs = []SchedulingJob{{Name: "wide", Replication: MaxReplication + 1, SlotIDs: slots(MaxReplication + 1)}}
		}), []string{"spec.jobs[0].replication: Invalid value", "spec.jobs[0].slotIDs: Too many"}},
		"every error, in field order": {queueScheduling(func(s *Scheduling) {
			s.Name, s.Spec.TestBed, s.Spec.Queue = "", "", "."
			s.Spec.Jobs = []SchedulingJob{{Name: "a", Replication: 0, SlotIDs: []int32{-2}}, {Name: "a", Replication: 1}}
		}), []string{
			"metadata.name: Required value", "spec.testBed: Required value", "spec.queue: Invalid value",
			"spec.jobs[0].replication: Invalid value", "spec.jobs[0].slotIDs[0]: Invalid value", "spec.jobs[0].slotIDs: Forbidden",
			"spec.jobs[1].name: Duplicate value",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := describe(ValidateScheduling(tc.obj)); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The messages say what is wrong in words a person can act on.
func TestValidateSchedulingJobs_Messages(t *testing.T) {
	errs := ValidateSchedulingJobs(QueueBased, []SchedulingJob{{Name: "etl", Replication: 1}, {Name: "etl", Replication: 1025}}, field.NewPath("jobs"))
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Error()
	}
	want := []string{`jobs[1].name: Duplicate value: "etl": job etl is listed already, at index 0`, "jobs[1].replication: Invalid value: 1025: must be from 1 to 1024"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestValidateAppendedSchedulingJobs(t *testing.T) {
	before := []SchedulingJob{{Name: "first", Replication: 2}}
	cases := map[string]struct {
		mode          SchedulingMode
		before, added []SchedulingJob
		want          []string
	}{
		"a new job":         {QueueBased, before, []SchedulingJob{{Name: "second", Replication: 1}}, nil},
		"nothing":           {QueueBased, before, nil, nil},
		"nothing to a none": {QueueBased, nil, nil, []string{"append: Required value"}},
		"a job it has":      {QueueBased, before, []SchedulingJob{{Name: "second", Replication: 1}, {Name: "first", Replication: 1}}, []string{"append[1].name: Duplicate value"}},
		"a job twice":       {QueueBased, before, []SchedulingJob{{Name: "x", Replication: 1}, {Name: "x", Replication: 1}}, []string{"append[1].name: Duplicate value"}},
		"past the most jobs": {QueueBased, manyJobs(MaxSchedulingJobs-1, 1), []SchedulingJob{{Name: "a", Replication: 1}, {Name: "b", Replication: 1}},
			[]string{"append: Too many"}},
		"up to the most jobs": {QueueBased, manyJobs(MaxSchedulingJobs-1, 1), []SchedulingJob{{Name: "a", Replication: 1}}, nil},
		"past the most slots": {QueueBased, manyJobs(MaxSchedulingSlots/MaxReplication, MaxReplication), []SchedulingJob{{Name: "a", Replication: 1}},
			[]string{"append: Invalid value"}},
		"a slot-based job without slots": {SlotBased, []SchedulingJob{{Name: "first", Replication: 1, SlotIDs: []int32{0}}}, []SchedulingJob{{Name: "b", Replication: 1}},
			[]string{"append[0].slotIDs: Required value"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := describe(ValidateAppendedSchedulingJobs(tc.mode, tc.before, tc.added, field.NewPath("append"))); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	errs := ValidateAppendedSchedulingJobs(QueueBased, before, []SchedulingJob{{Name: "first", Replication: 1}}, field.NewPath("append"))
	if len(errs) != 1 || errs[0].Detail != "job first is in the scheduling already" {
		t.Errorf("a job the scheduling has: %v", errs)
	}
}

func sparkJob(edit func(*BatchJob)) *BatchJob {
	j := &BatchJob{
		ObjectMeta: metav1.ObjectMeta{Name: "wordcount", Namespace: "default"},
		Spec: BatchJobSpec{Framework: FrameworkSpark, Application: Application{
			Image: "apache/spark:3.5.3", MainApplicationFile: "local:///opt/spark/examples/jars/spark-examples.jar",
		}},
	}
	if edit != nil {
		edit(j)
	}
	return j
}

func flinkJob(edit func(*BatchJob)) *BatchJob {
	return sparkJob(func(j *BatchJob) {
		j.Spec.Framework = FrameworkFlink
		j.Spec.Application.Image = "flink:1.20"
		if edit != nil {
			edit(j)
		}
	})
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// resources makes n resources of one unit each, named r0, r1, ...
func resources(n int) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := range n {
		rl[corev1.ResourceName(fmt.Sprintf("example.com/r%d", i))] = resource.MustParse("1")
	}
	return rl
}

func TestValidateBatchJob(t *testing.T) {
	cases := map[string]struct {
		obj  *BatchJob
		want []string
	}{
		"spark": {sparkJob(nil), nil},
		"flink": {flinkJob(func(j *BatchJob) { j.Spec.FlinkDeployment = raw(`{"flinkConfiguration":{}}`) }), nil},
		"every field at its bound": {sparkJob(func(j *BatchJob) {
			j.Spec.Application = Application{
				Image: strings.Repeat("i", MaxImageLength), Version: strings.Repeat("v", MaxVersionLength), Type: "Scala",
				MainClass: strings.Repeat("c", MaxMainClassLength), MainApplicationFile: strings.Repeat("f", MaxLocationLength),
				Arguments: manyStrings(MaxArguments, "x"), Dataset: strings.Repeat("d", MaxLocationLength),
			}
			j.Spec.DriverResources = resources(MaxDriverResources)
			j.Spec.Queue = "root.analytics-1.daily_2"
			j.Spec.User, j.Spec.Groups = strings.Repeat("ü", MaxNameLength), manyStrings(MaxGroups, "g")
			j.Spec.SparkApplication = raw(`{"sparkConf":{"a":"b"}}`)
		}), nil},
		"an empty wrapped spec is left out": {flinkJob(func(j *BatchJob) {
			j.Spec.SparkApplication = &runtime.RawExtension{}
			j.Spec.FlinkDeployment = raw(" null ")
		}), nil},

		"a name that is no DNS name": {sparkJob(func(j *BatchJob) { j.Name = "Word.Count!" }), []string{"metadata.name: Invalid value"}},
		"no framework":               {sparkJob(func(j *BatchJob) { j.Spec.Framework = "" }), []string{"spec.framework: Required value"}},
		"unknown framework":          {sparkJob(func(j *BatchJob) { j.Spec.Framework = "storm" }), []string{"spec.framework: Unsupported value"}},
		"no image":                   {sparkJob(func(j *BatchJob) { j.Spec.Application.Image = "" }), []string{"spec.application.image: Required value"}},
		"an image too long": {sparkJob(func(j *BatchJob) { j.Spec.Application.Image = strings.Repeat("i", MaxImageLength+1) }),
			[]string{"spec.application.image: Too long"}},
		"a version too long": {sparkJob(func(j *BatchJob) { j.Spec.Application.Version = strings.Repeat("v", MaxVersionLength+1) }),
			[]string{"spec.application.version: Too long"}},
		"an unknown type":     {sparkJob(func(j *BatchJob) { j.Spec.Application.Type = "Go" }), []string{"spec.application.type: Unsupported value"}},
		"a type on flink":     {flinkJob(func(j *BatchJob) { j.Spec.Application.Type = "Java" }), []string{"spec.application.type: Forbidden"}},
		"a bad type on flink": {flinkJob(func(j *BatchJob) { j.Spec.Application.Type = "Go" }), []string{"spec.application.type: Unsupported value", "spec.application.type: Forbidden"}},
		"a main class too long": {sparkJob(func(j *BatchJob) { j.Spec.Application.MainClass = strings.Repeat("c", MaxMainClassLength+1) }),
			[]string{"spec.application.mainClass: Too long"}},
		"no file": {sparkJob(func(j *BatchJob) { j.Spec.Application.MainApplicationFile = "" }), []string{"spec.application.mainApplicationFile: Required value"}},
		"a file too long": {sparkJob(func(j *BatchJob) { j.Spec.Application.MainApplicationFile = strings.Repeat("f", MaxLocationLength+1) }),
			[]string{"spec.application.mainApplicationFile: Too long"}},
		"too many arguments": {sparkJob(func(j *BatchJob) { j.Spec.Application.Arguments = manyStrings(MaxArguments+1, "") }),
			[]string{"spec.application.arguments: Too many"}},
		"a dataset too long": {sparkJob(func(j *BatchJob) { j.Spec.Application.Dataset = strings.Repeat("d", MaxLocationLength+1) }),
			[]string{"spec.application.dataset: Too long"}},
		"too many driver resources": {sparkJob(func(j *BatchJob) { j.Spec.DriverResources = resources(MaxDriverResources + 1) }),
			[]string{"spec.driverResources: Too many"}},
		"a zero and a negative driver resource": {sparkJob(func(j *BatchJob) {
			j.Spec.DriverResources = corev1.ResourceList{"memory": resource.MustParse("-1Gi"), "cpu": resource.MustParse("0"), "example.com/gpu": resource.MustParse("1")}
		}), []string{"spec.driverResources[cpu]: Invalid value", "spec.driverResources[memory]: Invalid value"}},
		"a bad queue":          {sparkJob(func(j *BatchJob) { j.Spec.Queue = ".root" }), []string{"spec.queue: Invalid value"}},
		"a user name too long": {sparkJob(func(j *BatchJob) { j.Spec.User = strings.Repeat("u", MaxNameLength+1) }), []string{"spec.user: Too long"}},
		"too many groups":      {sparkJob(func(j *BatchJob) { j.Spec.Groups = manyStrings(MaxGroups+1, "g") }), []string{"spec.groups: Too many"}},
		"a spark template on a flink job": {flinkJob(func(j *BatchJob) { j.Spec.SparkApplication = raw(`{}`) }),
			[]string{"spec.sparkApplication: Forbidden"}},
		"a flink template on a spark job": {sparkJob(func(j *BatchJob) { j.Spec.FlinkDeployment = raw(`{"job":{}}`) }),
			[]string{"spec.flinkDeployment: Forbidden"}},
		"a template that is no object": {sparkJob(func(j *BatchJob) { j.Spec.SparkApplication = raw(`[1, 2]`) }),
			[]string{"spec.sparkApplication: Invalid value"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := describe(ValidateBatchJob(tc.obj)); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateQueue(t *testing.T) {
	for queue, ok := range map[string]bool{
		"": true, "root": true, "root.analytics": true, "a-b_c.D9": true, strings.Repeat("q", MaxQueueLength): true,
		"root.": false, ".root": false, "root..a": false, "root/a": false, "röot": false, "root\n": false, strings.Repeat("q", MaxQueueLength+1): false,
	} {
		if got := len(ValidateQueue(queue, field.NewPath("queue"))) == 0; got != ok {
			t.Errorf("ValidateQueue(%q) accepts: %v, want %v", queue, got, ok)
		}
	}
}

// Scheduler data names are annotation names without a prefix; the data keeps within its
// bounds, names and values counted together.
func TestValidateSchedulerData(t *testing.T) {
	many := map[string]string{}
	for i := range MaxSchedulerDataKeys + 1 {
		many[fmt.Sprintf("k%d", i)] = ""
	}
	cases := map[string]struct {
		data map[string]string
		want []string
	}{
		"none":            {},
		"notes":           {data: map[string]string{"estimate": "30s", "best-slots": "0,1", "v1.model": "{}"}},
		"a space":         {data: map[string]string{"an estimate": "x"}, want: []string{"d[an estimate]"}},
		"a prefix":        {data: map[string]string{"slotplane.io/slot-id": "3"}, want: []string{"d[slotplane.io/slot-id]"}},
		"too long a name": {data: map[string]string{strings.Repeat("n", 64): ""}, want: []string{"d[" + strings.Repeat("n", 64) + "]"}},
		"too many":        {data: many, want: []string{"d"}},
		"too large":       {data: map[string]string{"big": strings.Repeat("x", MaxSchedulerDataBytes-2)}, want: []string{"d"}},
		"just fits":       {data: map[string]string{"big": strings.Repeat("x", MaxSchedulerDataBytes-3)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateSchedulerData(tc.data, field.NewPath("d")) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields at fault (-want +got)\n%s", diff)
			}
		})
	}
	if got := SchedulerData(map[string]string{SchedulerDataPrefix + "estimate": "1s", "other": "x", GroupName + "/sim-duration": "2s"}); !maps.Equal(got, map[string]string{"estimate": "1s"}) {
		t.Errorf("SchedulerData = %v", got)
	}
}
