package deploy

import (
	"strings"
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulerv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"slotplane/crds/v1alpha1"
)

// The manifests name what the code names: a renamed constant must not leave them behind.
func TestSchedulerConfig_MatchesTheAPI(t *testing.T) {
	var conf schedulerv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(SchedulerConfig, &conf); err != nil {
		t.Fatalf("kube-scheduler-config.yaml does not decode strictly: %v", err)
	}
	var profiles []string
	for _, p := range conf.Profiles {
		profiles = append(profiles, *p.SchedulerName)
	}
	if strings.Join(profiles, ",") != "default-scheduler,"+v1alpha1.SlotSchedulerName {
		t.Errorf("profiles %v, want default-scheduler and %s", profiles, v1alpha1.SlotSchedulerName)
	}
	if len(conf.Extenders) != 1 {
		t.Fatalf("%d extenders, want 1", len(conf.Extenders))
	}
	ext := conf.Extenders[0]
	if ext.FilterVerb != "filter" || ext.PreemptVerb != "preempt" || ext.BindVerb != "bind" || !ext.NodeCacheCapable || ext.Ignorable {
		t.Errorf("extender verbs or flags wrong: %+v", ext)
	}
	if len(ext.ManagedResources) != 1 || ext.ManagedResources[0].Name != v1alpha1.SlotResource || !ext.ManagedResources[0].IgnoredByScheduler {
		t.Errorf("managed resources %+v, want %s ignored by the scheduler", ext.ManagedResources, v1alpha1.SlotResource)
	}
}

func TestPriorityClasses_GhostsLowestBatchAbove(t *testing.T) {
	values := map[string]int32{}
	for _, doc := range strings.Split(string(PriorityClasses), "\n---\n") {
		var pc schedulingv1.PriorityClass
		if err := yaml.UnmarshalStrict([]byte(doc), &pc); err != nil {
			t.Fatal(err)
		}
		values[pc.Name] = pc.Value
	}
	ghost, batch := values[v1alpha1.GhostPriorityClass], values[v1alpha1.BatchPriorityClass]
	if len(values) != 2 || ghost >= 0 || batch <= 0 {
		t.Errorf("priority classes %v: want %s below 0 (under ordinary pods) and %s above 0", values, v1alpha1.GhostPriorityClass, v1alpha1.BatchPriorityClass)
	}
}
