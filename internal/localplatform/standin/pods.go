package standin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// podParts is what tells one pod the stand-in makes from another.
type podParts struct {
	namespace, name string
	// app is the application's name and uid; role is one of the Role* values.
	app  string
	uid  types.UID
	role string

	container, image string
	labels           map[string]string
	annotations      map[string]string
	resources        corev1.ResourceRequirements
	env              []corev1.EnvVar
	placement        placement
	serviceAccount   string
	gracePeriod      *int64
	owner            metav1.OwnerReference
}

// newPod builds a pod from its parts, with the stand-in's own labels and annotation added.
func newPod(p podParts) *corev1.Pod {
	labels := merged(p.labels, map[string]string{AppUIDLabel: string(p.uid), RoleLabel: p.role})
	annotations := merged(p.annotations, map[string]string{AppAnnotation: p.app})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.name, Namespace: p.namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{p.owner},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			SchedulerName:                 p.placement.schedulerName,
			PriorityClassName:             p.placement.priorityClassName,
			Affinity:                      p.placement.affinity.DeepCopy(),
			Tolerations:                   cloneTolerations(p.placement.tolerations),
			NodeSelector:                  nilIfEmpty(p.placement.nodeSelector),
			ServiceAccountName:            p.serviceAccount,
			TerminationGracePeriodSeconds: p.gracePeriod,
			Containers: []corev1.Container{{
				Name: p.container, Image: p.image, Resources: p.resources, Env: p.env,
			}},
		},
	}
}

// placement is what decides where a pod may go.
type placement struct {
	schedulerName, priorityClassName string
	affinity                         *corev1.Affinity
	tolerations                      []corev1.Toleration
	nodeSelector                     map[string]string
}

// or fills what pl leaves unset from a pod template; a nil template changes nothing. Node
// selectors are merged key by key, pl's keys winning, as both operators merge them.
func (pl placement) or(t *corev1.PodTemplateSpec) placement {
	if t == nil {
		return pl
	}
	s := t.Spec
	if pl.schedulerName == "" {
		pl.schedulerName = s.SchedulerName
	}
	if pl.priorityClassName == "" {
		pl.priorityClassName = s.PriorityClassName
	}
	if pl.affinity == nil {
		pl.affinity = s.Affinity
	}
	if pl.tolerations == nil {
		pl.tolerations = s.Tolerations
	}
	pl.nodeSelector = merged(s.NodeSelector, pl.nodeSelector)
	return pl
}

// templateContainer is the container of a pod template that the operator builds its main
// container on: the one named name, else (when first is set, as Spark does) the first one.
func templateContainer(t *corev1.PodTemplateSpec, name string, first bool) *corev1.Container {
	if t == nil || len(t.Spec.Containers) == 0 {
		return nil
	}
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == name {
			return &t.Spec.Containers[i]
		}
	}
	if first {
		return &t.Spec.Containers[0]
	}
	return nil
}

// templateResources is where both operators start a main container's resources: whatever
// the template's container asks for. They then set cpu and memory themselves, so resources
// such as slotplane.io/slot survive. Later containers win key by key.
func templateResources(containers ...*corev1.Container) corev1.ResourceRequirements {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range containers {
		if c == nil {
			continue
		}
		for name, q := range c.Resources.Requests {
			req[name] = q.DeepCopy()
		}
		for name, q := range c.Resources.Limits {
			lim[name] = q.DeepCopy()
		}
	}
	return corev1.ResourceRequirements{Requests: req, Limits: lim}
}

func templateMeta(t *corev1.PodTemplateSpec) (labels, annotations map[string]string) {
	if t == nil {
		return nil, nil
	}
	return t.Labels, t.Annotations
}

// withSim copies the simulation annotations of an application onto a main pod's annotations
// and checks them as kwok will read them: a duration kwok could not read would end the pod at
// once instead.
func withSim(annotations, app map[string]string) (map[string]string, error) {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range []string{SimDurationAnnotation, SimOutcomeAnnotation} {
		if v, ok := app[k]; ok {
			out[k] = v
		}
	}
	if v, ok := out[SimDurationAnnotation]; ok {
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return nil, fmt.Errorf("annotation %s=%q is not a duration such as 20s or 1m30s", SimDurationAnnotation, v)
		}
	}
	if v, ok := out[SimOutcomeAnnotation]; ok && v != SimOutcomeFailed && v != SimOutcomeSucceeded && v != SimOutcomeSuspended {
		return nil, fmt.Errorf("annotation %s=%q is not %s, %s or %s", SimOutcomeAnnotation, v, SimOutcomeSucceeded, SimOutcomeFailed, SimOutcomeSuspended)
	}
	return out, nil
}

// withoutSim drops the simulation annotations: executors and TaskManagers run until their
// driver or JobManager ends, whatever their templates say.
func withoutSim(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	delete(out, SimDurationAnnotation)
	delete(out, SimOutcomeAnnotation)
	return out
}

// merged is the union of the maps, later ones winning; nil maps are skipped.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func cloneTolerations(ts []corev1.Toleration) []corev1.Toleration {
	if ts == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&out[i])
	}
	return out
}

// envFromConf turns configuration keys under prefix into environment variables, sorted by
// name so that a pod built twice is the same pod.
func envFromConf(conf map[string]string, prefix string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for k, v := range conf {
		if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
			out = append(out, corev1.EnvVar{Name: name, Value: v})
		}
	}
	slices.SortFunc(out, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// concatEnv joins environment lists; a later variable of the same name replaces an earlier
// one in place.
func concatEnv(lists ...[]corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	at := map[string]int{}
	for _, list := range lists {
		for _, e := range list {
			if i, ok := at[e.Name]; ok {
				out[i] = *e.DeepCopy()
				continue
			}
			at[e.Name] = len(out)
			out = append(out, *e.DeepCopy())
		}
	}
	return out
}

var notLabelChars = regexp.MustCompile(`[^a-z0-9._-]+`)

// labelValue is s if it is a valid label value, else s made into one the way Spark makes its
// spark-app-name label: lower case, other characters replaced by '-', at most 63 long, with
// letters or digits at both ends.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	v := notLabelChars.ReplaceAllString(strings.ToLower(s), "-")
	if len(v) > validation.LabelValueMaxLength {
		v = v[:validation.LabelValueMaxLength]
	}
	return strings.Trim(v, "-._")
}

// hashOf is a stable hex digest of a UID, n characters long (at most 64).
func hashOf(uid types.UID, n int) string {
	sum := sha256.Sum256([]byte(uid))
	return hex.EncodeToString(sum[:])[:n]
}

// parseMemory reads the memory notation Spark and Flink share ("512m", "2g", "1024mb",
// "4096k", "2 gb", "1t") as bytes. A bare number is in bareUnit bytes: Spark reads it as MiB,
// Flink as bytes.
func parseMemory(s string, bareUnit int64) (int64, error) {
	v := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	units := []struct {
		suffix string
		factor int64
	}{
		{"pb", 1 << 50}, {"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10},
		{"p", 1 << 50}, {"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1},
	}
	factor := bareUnit
	for _, u := range units {
		if rest, ok := strings.CutSuffix(v, u.suffix); ok {
			v, factor = rest, u.factor
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || (n > 0 && factor > (1<<62)/n) {
		return 0, fmt.Errorf("memory %q is not a size like 512m or 2g", s)
	}
	return n * factor, nil
}

// mebibytes is a quantity of n MiB, in the form the operators write ("1408Mi").
func mebibytes(n int64) resource.Quantity {
	return *resource.NewQuantity(n<<20, resource.BinarySI)
}
