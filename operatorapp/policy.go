package operatorapp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"slotplane/crds/v1alpha1"
)

// The wrapped specs' allow-list.
//
// A BatchJob's sparkApplication or flinkDeployment is created by slotplane's worker, whose
// rights are not the job owner's: whatever a wrapped spec may set, anyone who may create a
// BatchJob may have slotplane do. So a wrapped spec may set only the fields on this list: the
// application's own code, configuration and the sizes slotplane overwrites anyway. Service
// accounts, secrets, volumes, host access, pod templates, scheduling fields and the
// Kubernetes settings in sparkConf and flinkConfiguration are refused, with the field named,
// unless the namespace's admins allow them (ConfigMap v1alpha1.JobPolicyConfigMap, see
// ParseWidening). The list is one thing used three times: the REST API refuses a job with
// 422, the BatchJob workflow marks a job created with kubectl (condition SpecAllowed), and
// the activity that creates the application checks again with the policy in force then.
//
// A rule is a path into the wrapped spec: field names joined by dots, "[]" for the items of
// an array (driver.env[].value). A map's keys are part of the path as they are, dots and all
// (sparkConf.spark.executor.cores). A rule allows or (with a leading "!") refuses everything
// at and below its path; a rule ending in "*" covers every path that begins with the rest.
// The longest rule that covers a path decides; a path no rule covers is refused.

// SpecRefusal is one field a wrapped spec may not set.
type SpecRefusal struct {
	// Path is the field's path from the BatchJob: spec.sparkApplication.driver.serviceAccount.
	Path   string
	Reason string
}

func (r SpecRefusal) String() string { return r.Path + ": " + r.Reason }

// JobPolicy is a namespace's word on wrapped specs (ConfigMap v1alpha1.JobPolicyConfigMap):
// what its admins allow beyond the default list, per framework, and the service accounts
// slotplane gives drivers and JobManagers that do not name one (or may not).
type JobPolicy struct {
	AllowSpark, AllowFlink []string
	// SparkServiceAccount is the driver's service account when the job sets none; empty
	// leaves it to Spark (the namespace's default account).
	SparkServiceAccount string
	// FlinkServiceAccount is the JobManager's; empty means DefaultFlinkServiceAccount.
	FlinkServiceAccount string
	// Broken says why the namespace's ConfigMap is not in force (it does not parse): the
	// default list is, and refusals say so.
	Broken string
}

// The keys of the policy ConfigMap.
const (
	PolicyAllowKey               = "allow"
	PolicySparkServiceAccountKey = "sparkServiceAccount"
	PolicyFlinkServiceAccountKey = "flinkServiceAccount"
)

const (
	whyNotAllowed = "is not among the fields a wrapped spec may set (a namespace admin may allow it in ConfigMap " + v1alpha1.JobPolicyConfigMap + ")"
	whySized      = "is sized by slotplane: executors fill their slots exactly and the driver has driverResources"
	whyPlaced     = "is slotplane's: it runs the job in cluster mode on the test bed"
)

// sparkRules: SparkApplication v1beta2 (Kubeflow Spark operator).
var sparkRules = []rule{
	allow("type"), allow("sparkVersion"), allow("mode"), allow("image"), allow("imagePullPolicy"),
	allow("mainClass"), allow("mainApplicationFile"), allow("arguments"), allow("deps"),
	allow("pythonVersion"), allow("timeToLiveSeconds"), allow("monitoring"), allow("hadoopConf"),
	allow("failureRetries"), allow("retryInterval"), allow("memoryOverheadFactor"),
	// slotplane overwrites these: a value is harmless and ignored.
	allow("restartPolicy"), allow("dynamicAllocation"), allow("batchScheduler"), allow("batchSchedulerOptions"),
	allow("driver.cores"), allow("driver.coreRequest"), allow("driver.coreLimit"), allow("driver.memory"),
	allow("driver.memoryOverhead"), allow("driver.memoryLimit"), allow("driver.javaOptions"),
	allow("driver.labels"), allow("driver.annotations"), allow("driver.terminationGracePeriodSeconds"),
	allow("driver.env[].name"), allow("driver.env[].value"),
	allow("driver.template.metadata.labels"), allow("driver.template.metadata.annotations"),
	allow("executor.cores"), allow("executor.coreRequest"), allow("executor.coreLimit"), allow("executor.memory"),
	allow("executor.memoryOverhead"), allow("executor.memoryLimit"), allow("executor.instances"),
	allow("executor.javaOptions"), allow("executor.labels"), allow("executor.annotations"),
	allow("executor.deleteOnTermination"), allow("executor.terminationGracePeriodSeconds"),
	allow("executor.env[].name"), allow("executor.env[].value"),
	allow("executor.schedulerName"), allow("executor.priorityClassName"), allow("executor.tolerations"),
	allow("executor.affinity"), allow("executor.nodeSelector"), allow("executor.template"),

	allow("sparkConf"),
	refuse("sparkConf.spark.kubernetes.*", "is a Kubernetes setting of Spark's (service accounts, pod templates, volumes, secrets): "+whyNotAllowed),
	allow("sparkConf.spark.kubernetes.driver.label.*"), allow("sparkConf.spark.kubernetes.driver.annotation.*"),
	allow("sparkConf.spark.kubernetes.executor.label.*"), allow("sparkConf.spark.kubernetes.executor.annotation.*"),
	refuse("sparkConf.spark.master", whyPlaced), refuse("sparkConf.spark.submit.deployMode", whyPlaced),
	refuse("sparkConf.spark.executor.instances", "is one executor per slot: "+whyPlaced),
	refuse("sparkConf.spark.dynamicAllocation.*", "is one executor per slot: "+whyPlaced),
	refuse("sparkConf.spark.executor.cores", whySized), refuse("sparkConf.spark.executor.memory*", whySized),
	refuse("sparkConf.spark.executor.resource.*", whySized), refuse("sparkConf.spark.executor.pyspark.memory", whySized),
	refuse("sparkConf.spark.driver.cores", whySized), refuse("sparkConf.spark.driver.memory*", whySized),
	refuse("sparkConf.spark.driver.resource.*", whySized), refuse("sparkConf.spark.memory.offHeap.*", whySized),
}

// flinkRules: FlinkDeployment v1beta1 (Apache Flink Kubernetes operator).
var flinkRules = []rule{
	allow("image"), allow("imagePullPolicy"), allow("flinkVersion"), allow("mode"), allow("restartNonce"),
	allow("logConfiguration"), allow("job"),
	allow("jobManager.resource"), allow("jobManager.replicas"),
	allow("jobManager.podTemplate.metadata.labels"), allow("jobManager.podTemplate.metadata.annotations"),
	allow("podTemplate.metadata.labels"), allow("podTemplate.metadata.annotations"),
	allow("taskManager"), // replaced whole by slotplane

	allow("flinkConfiguration"),
	refuse("flinkConfiguration.kubernetes.*", "is a Kubernetes setting of Flink's (service accounts, pod templates, secrets): "+whyNotAllowed),
	allow("flinkConfiguration.kubernetes.jobmanager.labels"), allow("flinkConfiguration.kubernetes.jobmanager.annotations"),
	allow("flinkConfiguration.kubernetes.taskmanager.labels"), allow("flinkConfiguration.kubernetes.taskmanager.annotations"),
	refuse("flinkConfiguration.taskmanager.numberOfTaskSlots", "is one task slot per TaskManager: "+whyPlaced),
	refuse("flinkConfiguration.taskmanager.memory.*", whySized), refuse("flinkConfiguration.taskmanager.cpu.*", whySized),
	refuse("flinkConfiguration.jobmanager.memory.*", whySized), refuse("flinkConfiguration.jobmanager.cpu.*", whySized),
	refuse("flinkConfiguration.parallelism.default", "is one per slot: "+whyPlaced),
	refuse("flinkConfiguration.execution.target", whyPlaced),
}

type rule struct {
	path   string // without the "!" and the "*"
	prefix bool   // ends in "*": covers every path beginning with path
	allow  bool
	reason string // why a refusing rule refuses
}

func allow(p string) rule { return parseRule(p, "") }

func refuse(p, why string) rule { return parseRule("!"+p, why) }

func parseRule(s, why string) rule {
	r := rule{allow: true}
	if rest, ok := strings.CutPrefix(s, "!"); ok {
		r.allow, s = false, rest
	}
	if rest, ok := strings.CutSuffix(s, "*"); ok {
		r.prefix, s = true, rest
	}
	r.path, r.reason = s, why
	return r
}

// covers says whether the rule decides for path: the path is the rule's, or below it, or
// (for a prefix rule) begins with it.
func (r rule) covers(path string) bool {
	if r.prefix {
		return strings.HasPrefix(path, r.path)
	}
	return path == r.path || strings.HasPrefix(path, r.path+".") || strings.HasPrefix(path, r.path+"[]")
}

// below says whether the rule decides for something under path only (so the walk must go
// down to see it).
func (r rule) below(path string) bool {
	if path == "" {
		return true
	}
	return len(r.path) > len(path) && (strings.HasPrefix(r.path, path+".") || strings.HasPrefix(r.path, path+"[]"))
}

// specPolicy is a framework's rules with a namespace's widening.
type specPolicy struct{ rules []rule }

func newSpecPolicy(base []rule, widen []string) specPolicy {
	rules := slices.Clone(base)
	for _, w := range widen {
		r := parseRule(w, "")
		r.allow = true // a widening only ever allows
		rules = append(rules, r)
	}
	return specPolicy{rules: rules}
}

// decide is the longest rule covering path (a widening wins a tie, being later), and
// whether some rule below path might decide otherwise.
func (p specPolicy) decide(path string) (decided *rule, deeper bool) {
	for i := range p.rules {
		r := &p.rules[i]
		if r.covers(path) && (decided == nil || len(r.path) >= len(decided.path)) {
			decided = r
		}
	}
	for i := range p.rules {
		if r := &p.rules[i]; r.below(path) && (decided == nil || r.allow != decided.allow) {
			deeper = true
		}
	}
	return decided, deeper
}

// check walks a decoded wrapped spec and refuses each field no rule allows, at the highest
// path where the whole subtree is refused.
func (p specPolicy) check(root string, v any, broken string) []SpecRefusal {
	whyNotAllowed := whyNotAllowed
	if broken != "" {
		whyNotAllowed += "; that ConfigMap is not in force: " + broken
	}
	var out []SpecRefusal
	var walk func(path string, v any)
	walk = func(path string, v any) {
		decided, deeper := p.decide(path)
		if !deeper {
			switch {
			case decided == nil:
				out = append(out, SpecRefusal{Path: join(root, path), Reason: whyNotAllowed})
			case !decided.allow:
				out = append(out, SpecRefusal{Path: join(root, path), Reason: decided.reason})
			}
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(join(path, k), x[k])
			}
			if len(x) > 0 {
				return
			}
		case []any:
			for _, item := range x {
				walk(path+"[]", item)
			}
			if len(x) > 0 {
				return
			}
		}
		// A value (or an empty object or array) where only something below is allowed.
		if decided == nil || !decided.allow {
			reason := whyNotAllowed
			if decided != nil {
				reason = decided.reason
			}
			out = append(out, SpecRefusal{Path: join(root, path), Reason: reason})
		}
	}
	walk("", v)
	// An array's items share a path: say each refusal once.
	return slices.CompactFunc(out, func(a, b SpecRefusal) bool { return a.Path == b.Path })
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "." + b
}

// CheckSpec lists the fields of a job's wrapped spec that the allow-list (widened by the
// namespace's policy) does not let it set; none means the job may run. A wrapped spec that
// is not a JSON object is refused whole.
func CheckSpec(spec *v1alpha1.BatchJobSpec, p JobPolicy) []SpecRefusal {
	var out []SpecRefusal
	for _, wrapped := range []struct {
		field string
		raw   []byte
		rules []rule
		widen []string
	}{
		{"spec.sparkApplication", rawOf(spec.SparkApplication), sparkRules, p.AllowSpark},
		{"spec.flinkDeployment", rawOf(spec.FlinkDeployment), flinkRules, p.AllowFlink},
	} {
		if len(wrapped.raw) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(wrapped.raw, &v); err != nil {
			out = append(out, SpecRefusal{Path: wrapped.field, Reason: "is not JSON: " + err.Error()})
			continue
		}
		if v == nil {
			continue
		}
		if _, ok := v.(map[string]any); !ok {
			out = append(out, SpecRefusal{Path: wrapped.field, Reason: "must be an object"})
			continue
		}
		out = append(out, newSpecPolicy(wrapped.rules, wrapped.widen).check(wrapped.field, v, p.Broken)...)
	}
	return out
}

func rawOf(r *runtime.RawExtension) []byte {
	if r == nil {
		return nil
	}
	return r.Raw
}

// ParseJobPolicy reads a namespace's policy ConfigMap data. Its "allow" key holds one rule
// per line, "spark <path>" or "flink <path>", in the rules' syntax (a trailing "*" covers
// a prefix); blank lines and lines starting with # are skipped. A widening only allows: "!"
// is refused. Unknown keys are refused, so a misspelt key does not go unnoticed.
func ParseJobPolicy(data map[string]string) (JobPolicy, error) {
	var p JobPolicy
	for k := range data {
		switch k {
		case PolicyAllowKey, PolicySparkServiceAccountKey, PolicyFlinkServiceAccountKey:
		default:
			return JobPolicy{}, fmt.Errorf("unknown key %q (known: %s, %s, %s)", k, PolicyAllowKey, PolicySparkServiceAccountKey, PolicyFlinkServiceAccountKey)
		}
	}
	for _, k := range []string{PolicySparkServiceAccountKey, PolicyFlinkServiceAccountKey} {
		v := strings.TrimSpace(data[k])
		if v == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
			return JobPolicy{}, fmt.Errorf("%s: %q is not a service account name: %s", k, v, strings.Join(errs, "; "))
		}
		if k == PolicySparkServiceAccountKey {
			p.SparkServiceAccount = v
		} else {
			p.FlinkServiceAccount = v
		}
	}
	sc := bufio.NewScanner(strings.NewReader(data[PolicyAllowKey]))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		framework, path, ok := strings.Cut(line, " ")
		path = strings.TrimSpace(path)
		where := fmt.Sprintf("%s line %d", PolicyAllowKey, n)
		switch {
		case !ok || path == "":
			return JobPolicy{}, fmt.Errorf("%s: %q is not \"spark <path>\" or \"flink <path>\"", where, line)
		case strings.HasPrefix(path, "!"):
			return JobPolicy{}, fmt.Errorf("%s: a widening only allows; %q starts with !", where, path)
		case strings.ContainsAny(path, " \t"):
			return JobPolicy{}, fmt.Errorf("%s: %q: a path has no spaces", where, path)
		case len(path) > 512:
			return JobPolicy{}, fmt.Errorf("%s: the path is longer than 512 characters", where)
		}
		switch v1alpha1.Framework(framework) {
		case v1alpha1.FrameworkSpark:
			p.AllowSpark = append(p.AllowSpark, path)
		case v1alpha1.FrameworkFlink:
			p.AllowFlink = append(p.AllowFlink, path)
		default:
			return JobPolicy{}, fmt.Errorf("%s: %q is not spark or flink", where, framework)
		}
	}
	if err := sc.Err(); err != nil {
		return JobPolicy{}, fmt.Errorf("%s: %w", PolicyAllowKey, err)
	}
	return p, nil
}
