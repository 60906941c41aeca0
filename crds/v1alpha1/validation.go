package v1alpha1

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The bounds the schema's markers state, besides the sizes next to SchedulingSpec. The
// markers are comments and cannot name a constant, so they repeat these numbers; the test
// TestMarkersMatchTheGoRules in package crds reads the generated CRDs and fails when the two
// drift apart.
const (
	// MaxNameLength bounds the names a spec holds (test bed, job, user, group): the
	// length of a Kubernetes object name.
	MaxNameLength = 253
	// MaxGroups is the most groups a BatchJob or a Scheduling names.
	MaxGroups = 64
	// MaxQueueLength bounds a queue path.
	MaxQueueLength = 255
	// MaxPriority bounds a BatchJob's priority either way.
	MaxPriority = 1_000_000
	// QueuePathPattern is the form of a queue path: names of letters, digits, '-' and '_',
	// joined by dots (root.analytics.daily). The CEL rules on the queue fields use it.
	QueuePathPattern = `^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`
	// MaxImageLength and MaxMainClassLength bound an application's image and entry class.
	MaxImageLength     = 1024
	MaxMainClassLength = 1024
	// MaxVersionLength bounds an engine version.
	MaxVersionLength = 32
	// MaxLocationLength bounds an application's file and its dataset, both URIs.
	MaxLocationLength = 4096
	// MaxArguments is the most arguments an application takes.
	MaxArguments = 256
	// MaxDriverResources is the most resources a driver's requests name.
	MaxDriverResources = 8
)

// queuePath matches QueuePathPattern. Go's regexp and CEL's matches() are both RE2, so the
// two accept the same paths.
var queuePath = regexp.MustCompile(QueuePathPattern)

// The values of the schema's enums, in the order the markers list them.
var (
	schedulingModes = []SchedulingMode{SlotBased, QueueBased}
	frameworks      = []Framework{FrameworkSpark, FrameworkFlink}
	sparkTypes      = []SparkType{"Java", "Scala", "Python", "R"}
)

// ValidateScheduling checks a new Scheduling by the rules its CRD gives the API server (the
// OpenAPI schema, its CEL rules, and the metadata rules the API server applies to every
// custom resource), so that a caller can refuse a bad object before it reaches the cluster
// and name each field at fault. The rules that compare an object with its previous version
// (the immutable fields) need both and are left to the API server. Only the spec is checked:
// the API server ignores the status a create carries. The name must already be generated.
func ValidateScheduling(s *Scheduling) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, ValidateSchedulingSpec(&s.Spec, field.NewPath("spec"))...)
}

// ValidateSchedulingSpec checks a Scheduling's spec; path names the spec.
func ValidateSchedulingSpec(spec *SchedulingSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, requiredString(spec.TestBed, MaxNameLength, path.Child("testBed"))...)
	errs = append(errs, enum(spec.Mode, schedulingModes, path.Child("mode"))...)
	errs = append(errs, ValidateQueue(spec.Queue, path.Child("queue"))...)
	errs = append(errs, identity(spec.User, spec.Groups, path)...)
	errs = append(errs, ValidateSchedulingJobs(spec.Mode, spec.Jobs, path.Child("jobs"))...)
	if ttl := spec.TTLSecondsAfterFinished; ttl != nil && (*ttl < 0 || *ttl > MaxTTLSecondsAfterFinished) {
		errs = append(errs, field.Invalid(path.Child("ttlSecondsAfterFinished"), *ttl, fmt.Sprintf("must be from 0 to %d seconds", MaxTTLSecondsAfterFinished)))
	}
	return errs
}

// ValidateSchedulingJobs checks the job list of a Scheduling of the given mode; path names
// the list. It holds no I/O and no map iteration, so a workflow may call it.
func ValidateSchedulingJobs(mode SchedulingMode, jobs []SchedulingJob, path *field.Path) field.ErrorList {
	return ValidateAppendedSchedulingJobs(mode, nil, jobs, path)
}

// ValidateAppendedSchedulingJobs checks that a Scheduling whose list holds the jobs before
// may append the jobs added: the list they make together must be one the schema accepts.
// path names the added jobs, and the errors about one job index them. The jobs before are
// taken as valid (the API server accepted them); they count towards the rules of the whole
// list: how many jobs, how many slots together, and that a job appears once.
func ValidateAppendedSchedulingJobs(mode SchedulingMode, before, added []SchedulingJob, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch n := len(before) + len(added); {
	case n == 0:
		errs = append(errs, field.Required(path, "a scheduling runs at least one job"))
	case n > MaxSchedulingJobs:
		errs = append(errs, field.TooMany(path, n, MaxSchedulingJobs))
	}
	// The CEL rule sums the replications as they are, out-of-range ones included; so does
	// this, so that the two speak of the same total.
	var slots int64
	for _, j := range before {
		slots += int64(j.Replication)
	}
	for _, j := range added {
		slots += int64(j.Replication)
	}
	if slots > MaxSchedulingSlots {
		errs = append(errs, field.Invalid(path, slots, fmt.Sprintf("a scheduling's jobs have at most %d slots together", MaxSchedulingSlots)))
	}
	// first maps a name to the index in added where it first appears, or -1 for a job of the
	// list before. It is only looked up, never ranged over.
	first := make(map[string]int, len(before)+len(added))
	for _, j := range before {
		first[j.Name] = -1
	}
	for i := range added {
		j, at := &added[i], path.Index(i)
		errs = append(errs, requiredString(j.Name, MaxNameLength, at.Child("name"))...)
		if k, dup := first[j.Name]; dup {
			e := field.Duplicate(at.Child("name"), j.Name)
			if k < 0 {
				e.Detail = fmt.Sprintf("job %s is in the scheduling already", j.Name)
			} else {
				e.Detail = fmt.Sprintf("job %s is listed already, at index %d", j.Name, k)
			}
			errs = append(errs, e)
		} else {
			first[j.Name] = i
		}
		errs = append(errs, schedulingJob(mode, j, at)...)
	}
	return errs
}

// schedulingJob checks one job of a Scheduling of the given mode, apart from its name.
func schedulingJob(mode SchedulingMode, j *SchedulingJob, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if j.Replication < 1 || j.Replication > MaxReplication {
		errs = append(errs, field.Invalid(path.Child("replication"), j.Replication, fmt.Sprintf("must be from 1 to %d", MaxReplication)))
	}
	ids := path.Child("slotIDs")
	// A job names one slot per replica, so a list of slots is as long as a replication
	// may be.
	if len(j.SlotIDs) > MaxReplication {
		errs = append(errs, field.TooMany(ids, len(j.SlotIDs), MaxReplication))
	}
	seen := make(map[int32]bool, len(j.SlotIDs))
	for k, id := range j.SlotIDs {
		switch {
		case id < 0:
			errs = append(errs, field.Invalid(ids.Index(k), id, "slot positions are 0 or more"))
		case seen[id]:
			errs = append(errs, field.Duplicate(ids.Index(k), id))
		}
		seen[id] = true
	}
	// An omitted list and an empty one are the same to a Go client, which leaves both out of
	// the object it sends; only a present, non-empty list counts as given.
	switch {
	case mode == SlotBased && len(j.SlotIDs) == 0:
		errs = append(errs, field.Required(ids, "every job of a SlotBased scheduling names its slots, one per replica"))
	case mode == SlotBased && len(j.SlotIDs) != int(j.Replication):
		errs = append(errs, field.Invalid(ids, len(j.SlotIDs), fmt.Sprintf("names %d slots for a replication of %d: a SlotBased scheduling needs one slot per replica", len(j.SlotIDs), j.Replication)))
	case mode == QueueBased && len(j.SlotIDs) > 0:
		errs = append(errs, field.Forbidden(ids, "slotIDs are only allowed in a SlotBased scheduling; a QueueBased one takes any free slots"))
	}
	return errs
}

// ValidateBatchJob checks a new BatchJob by the rules its CRD gives the API server, as
// ValidateScheduling does for a Scheduling: the immutable framework is left to the API
// server, and so is the status.
func ValidateBatchJob(j *BatchJob) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, ValidateBatchJobSpec(&j.Spec, field.NewPath("spec"))...)
}

// ValidateBatchJobSpec checks a BatchJob's spec; path names the spec.
func ValidateBatchJobSpec(spec *BatchJobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, enum(spec.Framework, frameworks, path.Child("framework"))...)
	errs = append(errs, application(&spec.Application, spec.Framework, path.Child("application"))...)
	errs = append(errs, driverResources(spec.DriverResources, path.Child("driverResources"))...)
	errs = append(errs, ValidateQueue(spec.Queue, path.Child("queue"))...)
	if spec.Priority < -MaxPriority || spec.Priority > MaxPriority {
		errs = append(errs, field.Invalid(path.Child("priority"), spec.Priority, fmt.Sprintf("must be between -%d and %d", MaxPriority, MaxPriority)))
	}
	errs = append(errs, identity(spec.User, spec.Groups, path)...)
	errs = append(errs, wrappedSpec(spec.SparkApplication, spec.Framework, FrameworkSpark, path.Child("sparkApplication"))...)
	errs = append(errs, wrappedSpec(spec.FlinkDeployment, spec.Framework, FrameworkFlink, path.Child("flinkDeployment"))...)
	if spec.SuspendedOutcome != "" {
		errs = append(errs, enum(spec.SuspendedOutcome, SuspendedOutcomes, path.Child("suspendedOutcome"))...)
	}
	return errs
}

// SuspendedOutcomes are the values of BatchJobSpec.SuspendedOutcome.
var SuspendedOutcomes = []RunOutcome{RunCompleted, RunFailed}

// application checks the persistent part of a job of the given framework.
func application(a *Application, framework Framework, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, requiredString(a.Image, MaxImageLength, path.Child("image"))...)
	errs = append(errs, optionalString(a.Version, MaxVersionLength, path.Child("version"))...)
	if a.Type != "" {
		if !slices.Contains(sparkTypes, a.Type) {
			errs = append(errs, field.NotSupported(path.Child("type"), a.Type, sparkTypes))
		}
		if framework != FrameworkSpark {
			errs = append(errs, field.Forbidden(path.Child("type"), "application.type is only allowed when framework is spark"))
		}
	}
	errs = append(errs, optionalString(a.MainClass, MaxMainClassLength, path.Child("mainClass"))...)
	errs = append(errs, requiredString(a.MainApplicationFile, MaxLocationLength, path.Child("mainApplicationFile"))...)
	if len(a.Arguments) > MaxArguments {
		errs = append(errs, field.TooMany(path.Child("arguments"), len(a.Arguments), MaxArguments))
	}
	return append(errs, optionalString(a.Dataset, MaxLocationLength, path.Child("dataset"))...)
}

// driverResources checks a driver's requests: few, and each more than nothing.
func driverResources(rl corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rl) > MaxDriverResources {
		errs = append(errs, field.TooMany(path, len(rl), MaxDriverResources))
	}
	// In name order, so that the same list always gives the same errors.
	names := make([]string, 0, len(rl))
	for name := range rl {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		if q := rl[corev1.ResourceName(name)]; q.Sign() <= 0 {
			errs = append(errs, field.Invalid(path.Key(name), q.String(), "every quantity in driverResources must be greater than zero"))
		}
	}
	return errs
}

// wrappedSpec checks a SparkApplication or FlinkDeployment spec to start from: only a job of
// its own framework may carry one, and it must be a JSON object.
func wrappedSpec(raw *runtime.RawExtension, framework, own Framework, path *field.Path) field.ErrorList {
	present, object := rawObject(raw)
	if !present {
		return nil
	}
	var errs field.ErrorList
	if !object {
		errs = append(errs, field.Invalid(path, string(raw.Raw), "must be a JSON object"))
	}
	if framework != own {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("only allowed when framework is %s", own)))
	}
	return errs
}

// rawObject says whether a wrapped spec is in the object as the API server sees it, and
// whether it is a JSON object. A nil extension is left out of the JSON, an empty one is
// written as null, and the API server drops a null field its schema does not declare
// nullable: all three are absent.
func rawObject(raw *runtime.RawExtension) (present, object bool) {
	switch {
	case raw == nil:
		return false, false
	case raw.Object != nil:
		return true, true // a runtime.Object is written as a JSON object
	}
	b := bytes.TrimSpace(raw.Raw)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return false, false
	}
	return true, b[0] == '{'
}

// ValidateQueue checks an optional queue path; path names the field.
func ValidateQueue(queue string, path *field.Path) field.ErrorList {
	if queue == "" {
		return nil
	}
	errs := optionalString(queue, MaxQueueLength, path)
	if !queuePath.MatchString(queue) {
		errs = append(errs, field.Invalid(path, queue, "queue must be a dotted path of names made of letters, digits, '-' and '_', such as root.analytics"))
	}
	return errs
}

// identity checks the user and groups a spec names; path names the spec.
func identity(user string, groups []string, path *field.Path) field.ErrorList {
	errs := optionalString(user, MaxNameLength, path.Child("user"))
	if len(groups) > MaxGroups {
		errs = append(errs, field.TooMany(path.Child("groups"), len(groups), MaxGroups))
	}
	for i, g := range groups {
		errs = append(errs, optionalString(g, MaxNameLength, path.Child("groups").Index(i))...)
	}
	return errs
}

// requiredString checks a string the schema requires to be non-empty and bounds.
func requiredString(s string, maxLen int, path *field.Path) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return optionalString(s, maxLen, path)
}

// optionalString checks a string's bound. OpenAPI's maxLength counts characters, not bytes,
// and so does this.
func optionalString(s string, maxLen int, path *field.Path) field.ErrorList {
	if utf8.RuneCountInString(s) > maxLen {
		return field.ErrorList{field.TooLongCharacters(path, s, maxLen)}
	}
	return nil
}

// enum checks a required field that takes one of a few values.
func enum[T ~string](v T, values []T, path *field.Path) field.ErrorList {
	switch {
	case v == "":
		return field.ErrorList{field.Required(path, fmt.Sprintf("one of %s", joinValues(values)))}
	case !slices.Contains(values, v):
		return field.ErrorList{field.NotSupported(path, v, values)}
	}
	return nil
}

func joinValues[T ~string](values []T) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// ValidateSchedulerData checks a job's whole scheduler data as it would be stored: each name
// is an annotation name (what follows SchedulerDataPrefix), and the notes stay within
// MaxSchedulerDataKeys and MaxSchedulerDataBytes (names and values together).
func ValidateSchedulerData(data map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	size := 0
	names := slices.Sorted(maps.Keys(data))
	for _, name := range names {
		if strings.Contains(name, "/") {
			errs = append(errs, field.Invalid(path.Key(name), name, "a name has no prefix of its own: it follows "+SchedulerDataPrefix))
		} else {
			for _, msg := range validation.IsQualifiedName(name) {
				errs = append(errs, field.Invalid(path.Key(name), name, msg))
			}
		}
		size += len(name) + len(data[name])
	}
	if len(data) > MaxSchedulerDataKeys {
		errs = append(errs, field.TooMany(path, len(data), MaxSchedulerDataKeys))
	}
	if size > MaxSchedulerDataBytes {
		errs = append(errs, field.TooLong(path, "", MaxSchedulerDataBytes))
	}
	return errs
}
