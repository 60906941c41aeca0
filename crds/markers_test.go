package crds_test

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"slotplane/crds"
	"slotplane/crds/v1alpha1"
)

// specSchema returns the spec schema of the slotplane.io CRD of the given kind.
func specSchema(t *testing.T, kind string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, data := range crds.Slotplane() {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Names.Kind == kind {
			return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		}
	}
	t.Fatalf("no CRD of kind %s", kind)
	return apiextensionsv1.JSONSchemaProps{}
}

// rules joins the CEL rules of a schema node.
func rules(p apiextensionsv1.JSONSchemaProps) string {
	var out []string
	for _, r := range p.XValidations {
		out = append(out, r.Rule)
	}
	return strings.Join(out, "\n")
}

// The markers on the types are comments, so they repeat the numbers of crds/v1alpha1's
// constants. The generated CRDs must state the same bounds as the Go rules use, or the two
// would judge objects at the bounds differently.
func TestMarkersMatchTheGoRules(t *testing.T) {
	num := func(v *int64) string {
		if v == nil {
			return "none"
		}
		return fmt.Sprint(*v)
	}
	float := func(v *float64) string {
		if v == nil {
			return "none"
		}
		return fmt.Sprint(*v)
	}
	// The CEL rule holds the pattern in a string literal, its backslashes doubled.
	queueRule := fmt.Sprintf("self.matches('%s')", strings.ReplaceAll(v1alpha1.QueuePathPattern, `\`, `\\`))

	sched := specSchema(t, "Scheduling")
	jobs := sched.Properties["jobs"]
	job := jobs.Items.Schema.Properties
	bj := specSchema(t, "BatchJob")
	app := bj.Properties["application"].Properties
	checks := []struct{ what, have, want string }{
		{"scheduling testBed maxLength", num(sched.Properties["testBed"].MaxLength), fmt.Sprint(v1alpha1.MaxNameLength)},
		{"scheduling testBed minLength", num(sched.Properties["testBed"].MinLength), "1"},
		{"scheduling queue maxLength", num(sched.Properties["queue"].MaxLength), fmt.Sprint(v1alpha1.MaxQueueLength)},
		{"scheduling queue rule", rules(sched.Properties["queue"]), queueRule},
		{"scheduling user maxLength", num(sched.Properties["user"].MaxLength), fmt.Sprint(v1alpha1.MaxNameLength)},
		{"scheduling groups maxItems", num(sched.Properties["groups"].MaxItems), fmt.Sprint(v1alpha1.MaxGroups)},
		{"scheduling group maxLength", num(sched.Properties["groups"].Items.Schema.MaxLength), fmt.Sprint(v1alpha1.MaxNameLength)},
		{"scheduling jobs minItems", num(jobs.MinItems), "1"},
		{"scheduling jobs maxItems", num(jobs.MaxItems), fmt.Sprint(v1alpha1.MaxSchedulingJobs)},
		{"scheduling jobs rule", rules(jobs), fmt.Sprintf("self.map(j, j.replication).sum() <= %d", v1alpha1.MaxSchedulingSlots)},
		{"job name minLength", num(job["name"].MinLength), "1"},
		{"job name maxLength", num(job["name"].MaxLength), fmt.Sprint(v1alpha1.MaxNameLength)},
		{"job replication rules", rules(job["replication"]), fmt.Sprintf("self >= 1\nself <= %d", v1alpha1.MaxReplication)},
		{"job slotIDs maxItems", num(job["slotIDs"].MaxItems), fmt.Sprint(v1alpha1.MaxReplication)},
		{"job slotIDs minimum", float(job["slotIDs"].Items.Schema.Minimum), "0"},

		{"batchjob image minLength", num(app["image"].MinLength), "1"},
		{"batchjob image maxLength", num(app["image"].MaxLength), fmt.Sprint(v1alpha1.MaxImageLength)},
		{"batchjob version maxLength", num(app["version"].MaxLength), fmt.Sprint(v1alpha1.MaxVersionLength)},
		{"batchjob mainClass maxLength", num(app["mainClass"].MaxLength), fmt.Sprint(v1alpha1.MaxMainClassLength)},
		{"batchjob mainApplicationFile minLength", num(app["mainApplicationFile"].MinLength), "1"},
		{"batchjob mainApplicationFile maxLength", num(app["mainApplicationFile"].MaxLength), fmt.Sprint(v1alpha1.MaxLocationLength)},
		{"batchjob dataset maxLength", num(app["dataset"].MaxLength), fmt.Sprint(v1alpha1.MaxLocationLength)},
		{"batchjob arguments maxItems", num(app["arguments"].MaxItems), fmt.Sprint(v1alpha1.MaxArguments)},
		{"batchjob driverResources maxProperties", num(bj.Properties["driverResources"].MaxProperties), fmt.Sprint(v1alpha1.MaxDriverResources)},
		{"batchjob queue maxLength", num(bj.Properties["queue"].MaxLength), fmt.Sprint(v1alpha1.MaxQueueLength)},
		{"batchjob queue rule", rules(bj.Properties["queue"]), queueRule},
		{"batchjob priority minimum", float(bj.Properties["priority"].Minimum), fmt.Sprint(float64(-v1alpha1.MaxPriority))},
		{"batchjob priority maximum", float(bj.Properties["priority"].Maximum), fmt.Sprint(float64(v1alpha1.MaxPriority))},
		{"batchjob user maxLength", num(bj.Properties["user"].MaxLength), fmt.Sprint(v1alpha1.MaxNameLength)},
		{"batchjob groups maxItems", num(bj.Properties["groups"].MaxItems), fmt.Sprint(v1alpha1.MaxGroups)},
		{"batchjob group maxLength", num(bj.Properties["groups"].Items.Schema.MaxLength), fmt.Sprint(v1alpha1.MaxNameLength)},
	}
	for _, c := range checks {
		if c.have != c.want {
			t.Errorf("%s: the CRD says %q, the Go rules %q", c.what, c.have, c.want)
		}
	}
}
