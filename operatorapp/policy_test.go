package operatorapp

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"slotplane/crds/v1alpha1"
)

func sparkSpec(raw string) *v1alpha1.BatchJobSpec {
	return &v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, SparkApplication: &runtime.RawExtension{Raw: []byte(raw)}}
}

func flinkSpec(raw string) *v1alpha1.BatchJobSpec {
	return &v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkFlink, FlinkDeployment: &runtime.RawExtension{Raw: []byte(raw)}}
}

func paths(rs []SpecRefusal) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path)
	}
	return out
}

func TestCheckSpec(t *testing.T) {
	cases := map[string]struct {
		spec   *v1alpha1.BatchJobSpec
		policy JobPolicy
		want   []string
	}{
		"nothing wrapped": {spec: &v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark}},
		"null":            {spec: sparkSpec(`null`)},
		"the application's own code and configuration": {spec: sparkSpec(`{
			"type": "Python", "pythonVersion": "3", "arguments": ["a"], "deps": {"pyFiles": ["x.py"], "packages": ["p"]},
			"sparkConf": {"spark.sql.shuffle.partitions": "8", "spark.kubernetes.driver.label.team": "a", "spark.eventLog.enabled": "true"},
			"hadoopConf": {"fs.s3a.endpoint": "http://s3"},
			"driver": {"javaOptions": "-Dx=y", "env": [{"name": "A", "value": "1"}, {"name": "B"}], "labels": {"team": "a"},
				"template": {"metadata": {"labels": {"team": "a"}}}},
			"executor": {"instances": 3, "cores": 2, "env": [{"name": "A", "value": "1"}], "affinity": {}},
			"monitoring": {"exposeDriverMetrics": true}
		}`)},
		"the usual ways around": {spec: sparkSpec(`{
			"driver": {"serviceAccount": "admin", "secrets": [{"name": "s", "path": "/s", "secretType": "Generic"}],
				"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}, {"name": "B", "value": "1"}],
				"envFrom": [{"secretRef": {"name": "db"}}], "hostNetwork": true, "nodeSelector": {"x": "y"},
				"template": {"spec": {"hostPID": true}}},
			"executor": {"serviceAccount": "admin", "volumeMounts": [{"name": "root", "mountPath": "/host"}]},
			"volumes": [{"name": "root", "hostPath": {"path": "/"}}],
			"sparkConf": {"spark.kubernetes.authenticate.driver.serviceAccountName": "admin",
				"spark.kubernetes.driver.podTemplateFile": "/t.yaml", "spark.master": "local",
				"spark.executor.memoryOverhead": "9g", "spark.dynamicAllocation.enabled": "true"},
			"proxyUser": "hdfs", "kubernetesMaster": "https://elsewhere", "imagePullSecrets": ["r"],
			"sparkUIOptions": {"ingressAnnotations": {}}, "nodeSelector": {"a": "b"}
		}`), want: []string{
			"spec.sparkApplication.driver.env[].valueFrom",
			"spec.sparkApplication.driver.envFrom",
			"spec.sparkApplication.driver.hostNetwork",
			"spec.sparkApplication.driver.nodeSelector",
			"spec.sparkApplication.driver.secrets",
			"spec.sparkApplication.driver.serviceAccount",
			"spec.sparkApplication.driver.template.spec",
			"spec.sparkApplication.executor.serviceAccount",
			"spec.sparkApplication.executor.volumeMounts",
			"spec.sparkApplication.imagePullSecrets",
			"spec.sparkApplication.kubernetesMaster",
			"spec.sparkApplication.nodeSelector",
			"spec.sparkApplication.proxyUser",
			"spec.sparkApplication.sparkConf.spark.dynamicAllocation.enabled",
			"spec.sparkApplication.sparkConf.spark.executor.memoryOverhead",
			"spec.sparkApplication.sparkConf.spark.kubernetes.authenticate.driver.serviceAccountName",
			"spec.sparkApplication.sparkConf.spark.kubernetes.driver.podTemplateFile",
			"spec.sparkApplication.sparkConf.spark.master",
			"spec.sparkApplication.sparkUIOptions",
			"spec.sparkApplication.volumes",
		}},
		"a misspelt field is refused, not passed on": {spec: sparkSpec(`{"mainclass": "x"}`), want: []string{"spec.sparkApplication.mainclass"}},
		"empty containers count": {spec: sparkSpec(`{"volumes": [], "driver": {"secrets": []}}`),
			want: []string{"spec.sparkApplication.driver.secrets", "spec.sparkApplication.volumes"}},
		"not an object": {spec: sparkSpec(`["a"]`), want: []string{"spec.sparkApplication"}},
		"the namespace widens": {spec: sparkSpec(`{
			"driver": {"serviceAccount": "etl", "secrets": [{"name": "s"}]},
			"sparkConf": {"spark.kubernetes.authenticate.driver.serviceAccountName": "etl", "spark.kubernetes.file.upload.path": "s3a://x"},
			"volumes": [{"name": "v", "emptyDir": {}}]
		}`), policy: JobPolicy{AllowSpark: []string{"driver.serviceAccount", "sparkConf.spark.kubernetes.authenticate.*", "volumes"}},
			want: []string{"spec.sparkApplication.driver.secrets", "spec.sparkApplication.sparkConf.spark.kubernetes.file.upload.path"}},
		"a widening wins over a refusing rule of the same path": {spec: sparkSpec(`{"sparkConf": {"spark.kubernetes.x": "1"}}`),
			policy: JobPolicy{AllowSpark: []string{"sparkConf.spark.kubernetes.*"}}},
		"flink's own": {spec: flinkSpec(`{
			"flinkConfiguration": {"state.backend.type": "rocksdb", "kubernetes.taskmanager.labels": "team:a"},
			"job": {"jarURI": "local:///x.jar", "upgradeMode": "savepoint", "initialSavepointPath": "s3://x"},
			"logConfiguration": {"log4j-console.properties": "x"},
			"podTemplate": {"metadata": {"labels": {"team": "a"}}},
			"taskManager": {"podTemplate": {"spec": {"hostNetwork": true}}}
		}`)},
		"flink's ways around": {spec: flinkSpec(`{
			"serviceAccount": "admin", "ingress": {"template": "x"},
			"podTemplate": {"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}},
			"jobManager": {"podTemplate": {"spec": {"serviceAccountName": "admin"}}},
			"flinkConfiguration": {"kubernetes.service-account": "admin", "taskmanager.numberOfTaskSlots": "4", "taskmanager.memory.process.size": "64g"}
		}`), want: []string{
			"spec.flinkDeployment.flinkConfiguration.kubernetes.service-account",
			"spec.flinkDeployment.flinkConfiguration.taskmanager.memory.process.size",
			"spec.flinkDeployment.flinkConfiguration.taskmanager.numberOfTaskSlots",
			"spec.flinkDeployment.ingress",
			"spec.flinkDeployment.jobManager.podTemplate.spec",
			"spec.flinkDeployment.podTemplate.spec",
			"spec.flinkDeployment.serviceAccount",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CheckSpec(tc.spec, tc.policy)
			if diff := cmp.Diff(tc.want, paths(got)); diff != "" {
				t.Errorf("refused (-want +got)\n%s", diff)
			}
			for _, r := range got {
				if r.Reason == "" {
					t.Errorf("%s refused without a reason", r.Path)
				}
			}
		})
	}
}

// The builders refuse what the list refuses, whoever calls them: the activity checks again
// with the policy in force when the application is made.
func TestBuildersRefuseWhatTheListRefuses(t *testing.T) {
	r := run(v1alpha1.FrameworkSpark)
	r.Job.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{"driver": {"serviceAccount": "admin"}}`)}
	_, err := Spark(r)
	var se *SpecError
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &se) || len(se.Refused) != 1 || !strings.Contains(err.Error(), "driver.serviceAccount") {
		t.Fatalf("Spark = %v; want ErrInvalid naming driver.serviceAccount", err)
	}
	r.Policy.AllowSpark = []string{"driver.serviceAccount"}
	app, err := Spark(r)
	if err != nil || app.Spec.Driver.ServiceAccount != "admin" {
		t.Fatalf("widened: %v, service account %q", err, app.Spec.Driver.ServiceAccount)
	}

	f := run(v1alpha1.FrameworkFlink)
	f.Job.Spec.FlinkDeployment = &runtime.RawExtension{Raw: []byte(`{"podTemplate": {"spec": {"hostNetwork": true}}}`)}
	if _, err := Flink(f); !errors.As(err, &se) {
		t.Fatalf("Flink = %v; want a SpecError", err)
	}
}

func TestServiceAccountDefaults(t *testing.T) {
	f := run(v1alpha1.FrameworkFlink)
	dep, err := Flink(f)
	if err != nil || dep.Spec.ServiceAccount != DefaultFlinkServiceAccount {
		t.Fatalf("Flink: %v, service account %q", err, dep.Spec.ServiceAccount)
	}
	f.Policy.FlinkServiceAccount = "flink-jobs"
	if dep, _ := Flink(f); dep.Spec.ServiceAccount != "flink-jobs" {
		t.Errorf("the namespace's account: got %q", dep.Spec.ServiceAccount)
	}
	s := run(v1alpha1.FrameworkSpark)
	if app, _ := Spark(s); app.Spec.Driver.ServiceAccount != "" {
		t.Errorf("no policy: the driver got account %q", app.Spec.Driver.ServiceAccount)
	}
	s.Policy.SparkServiceAccount = "spark"
	if app, _ := Spark(s); app.Spec.Driver.ServiceAccount != "spark" {
		t.Errorf("the namespace's account: got %q", app.Spec.Driver.ServiceAccount)
	}
}

func TestParseJobPolicy(t *testing.T) {
	got, err := ParseJobPolicy(map[string]string{
		PolicyAllowKey:               "# teams that need their own accounts\nspark driver.serviceAccount\n\nspark sparkConf.spark.kubernetes.authenticate.*\nflink serviceAccount\n",
		PolicyFlinkServiceAccountKey: "flink-jobs",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := JobPolicy{AllowSpark: []string{"driver.serviceAccount", "sparkConf.spark.kubernetes.authenticate.*"}, AllowFlink: []string{"serviceAccount"}, FlinkServiceAccount: "flink-jobs"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for name, data := range map[string]map[string]string{
		"unknown framework":  {PolicyAllowKey: "yarn driver.x"},
		"no path":            {PolicyAllowKey: "spark"},
		"a refusal":          {PolicyAllowKey: "spark !driver.serviceAccount"},
		"spaces in the path": {PolicyAllowKey: "spark driver. serviceAccount x"},
		"a misspelt key":     {"alow": "spark volumes"},
		"a bad account name": {PolicySparkServiceAccountKey: "Not An Account"},
		"an overlong path":   {PolicyAllowKey: "spark " + strings.Repeat("a", 600)},
	} {
		if _, err := ParseJobPolicy(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The example jobs keep to the default list.
func TestExampleSpecsAreAllowed(t *testing.T) {
	for _, spec := range []*v1alpha1.BatchJobSpec{
		sparkSpec(`{"sparkConf": {"spark.sql.adaptive.enabled": "true"}, "driver": {"javaOptions": "-Dlog4j.configuration=x"}}`),
		flinkSpec(`{"flinkConfiguration": {"execution.checkpointing.interval": "10s"}, "job": {"upgradeMode": "stateless"}}`),
	} {
		if got := CheckSpec(spec, JobPolicy{}); len(got) != 0 {
			t.Errorf("refused %v", got)
		}
	}
}

func FuzzCheckSpec(f *testing.F) {
	f.Add([]byte(`{"driver": {"env": [{"name": "a", "valueFrom": {}}]}}`), "spark volumes")
	f.Add([]byte(`{"sparkConf": {"spark.kubernetes.x": "1"}}`), "spark sparkConf.spark.kubernetes.*")
	f.Add([]byte(`[[[[]]]]`), "")
	f.Fuzz(func(t *testing.T, raw []byte, allow string) {
		p, err := ParseJobPolicy(map[string]string{PolicyAllowKey: allow})
		if err != nil {
			return
		}
		for _, spec := range []*v1alpha1.BatchJobSpec{sparkSpec(string(raw)), flinkSpec(string(raw))} {
			for _, r := range CheckSpec(spec, p) {
				if !strings.HasPrefix(r.Path, "spec.") || r.Reason == "" {
					t.Fatalf("refusal %+v", r)
				}
			}
		}
	})
}

// A policy that does not parse leaves the default list in force, and the refusal says why.
func TestBrokenPolicyFallsBackToTheDefaultList(t *testing.T) {
	got := CheckSpec(sparkSpec(`{"volumes": []}`), JobPolicy{Broken: "allow line 1: bad"})
	if len(got) != 1 || !strings.Contains(got[0].Reason, "not in force: allow line 1: bad") {
		t.Errorf("refusals %v", got)
	}
}
