package bridge

import (
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// maxConditionMessage is the API server's limit on a condition's message.
const maxConditionMessage = 32768

// QueuesCondition is the QueuesConfigured condition for the namespace's queues ConfigMap
// (nil: there is none). It parses the allocation file and its settings as the Admission
// workflows do (queue.ParseConfig: a mistake in either rejects both), so what it says holds
// for them. LastTransitionTime is left to the writer.
func QueuesCondition(cm *corev1.ConfigMap) metav1.Condition {
	cond := metav1.Condition{Type: v1alpha1.ConditionQueuesConfigured}
	var f queue.ConfigFiles
	where := "ConfigMap " + v1alpha1.QueuesConfigMap
	if cm != nil {
		var alloc, settings string
		alloc, f.HasAllocations = cm.Data[v1alpha1.QueuesConfigMapKey]
		settings, f.HasSettings = cm.Data[v1alpha1.QueuesSettingsKey]
		f.Allocations, f.Settings = []byte(alloc), []byte(settings)
		where += ", resourceVersion " + cm.ResourceVersion
	}
	if !f.HasAllocations && !f.HasSettings {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonNoQueuesFile
		cond.Message = fmt.Sprintf("no allocation file (%s, key %s): the default queues are in force, one level under root, each open to every user",
			where, v1alpha1.QueuesConfigMapKey)
		return cond
	}
	a, err := queue.ParseConfig(f)
	switch {
	case err != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonQueuesRejected
		cond.Message = fmt.Sprintf("the queue configuration (%s) does not load, so the queues keep the last one that did, or the defaults: %v", where, err)
	case len(a.Warnings()) > 0:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonOpenACLs
		cond.Message = fmt.Sprintf("the queue configuration (%s) loads, but %s", where, strings.Join(a.Warnings(), " "))
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonQueuesAccepted
		cond.Message = fmt.Sprintf("the queue configuration (%s) loads, and root's ACLs restrict who may submit to and administer its queues", where)
	}
	if err == nil {
		var unknown []string
		for _, i := range a.Ignored {
			if i.Unknown {
				unknown = append(unknown, fmt.Sprintf("line %d, <%s>", i.Line, i.Element))
			}
		}
		if len(unknown) > 0 {
			cond.Message += fmt.Sprintf(". It leaves out the elements it does not know, as the Fair Scheduler does (a typo of a known one?): %s",
				strings.Join(unknown, "; "))
		}
	}
	cond.Message = truncate(cond.Message, maxConditionMessage)
	return cond
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	s = s[:n-len(mark)]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + mark
}
