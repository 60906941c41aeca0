//go:build integration

package operatorapp

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
)

// warnings records what the API server warns of.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// What slotplane writes, and manifests that use the fields the operators' own examples use,
// are accepted by the operators' CRDs with strict field validation, without a warning, and
// read back unchanged (the schema pruned nothing). The CRDs are the ones the local platform
// installs, whose shape TestOperatorCRDsMatchTheReleasedOnes holds to the released ones.
func TestOperatorsAcceptWhatSlotplaneWrites(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	cfg := rest.CopyConfig(c.Config)
	warned := &warnings{}
	cfg.WarningHandler = warned
	cl, err := client.New(cfg, client.Options{Scheme: kubeclient.Scheme()})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, cl.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"}}}))
	strict := client.FieldValidation(metav1.FieldValidationStrict)

	// Every shape slotplane builds: a job without a wrapped spec, one with every optional
	// field the default list allows, and one with what a namespace admin may allow besides.
	richSpark := `{
		"sparkConf": {"spark.sql.shuffle.partitions": "8", "spark.kubernetes.driver.label.team": "a"},
		"hadoopConf": {"fs.s3a.endpoint": "http://minio:9000"}, "deps": {"jars": ["local:///opt/lib/a.jar"], "packages": ["org.example:lib:1.0"]},
		"monitoring": {"exposeDriverMetrics": true, "exposeExecutorMetrics": true, "prometheus": {"jmxExporterJar": "/prom/agent.jar", "port": 8090}},
		"timeToLiveSeconds": 3600, "failureRetries": 1, "retryInterval": 5, "memoryOverheadFactor": "0.2", "pythonVersion": "3",
		"restartPolicy": {"type": "OnFailure", "onFailureRetries": 3}, "dynamicAllocation": {"enabled": true}, "batchScheduler": "volcano",
		"driver": {"cores": 2, "coreLimit": "2", "memory": "2g", "javaOptions": "-Dx=y", "labels": {"team": "a"}, "annotations": {"note": "n"},
			"env": [{"name": "A", "value": "1"}], "terminationGracePeriodSeconds": 30, "template": {"metadata": {"labels": {"t": "d"}}}},
		"executor": {"instances": 9, "cores": 3, "memory": "9g", "deleteOnTermination": false, "labels": {"team": "a"}, "env": [{"name": "B", "value": "2"}],
			"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], "nodeSelector": {"pool": "x"},
			"template": {"metadata": {"labels": {"t": "e"}}, "spec": {"containers": [{"name": "spark-kubernetes-executor", "env": [{"name": "C", "value": "3"}]}]}}}
	}`
	adminSpark := `{
		"volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
		"driver": {"volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}], "serviceAccount": "spark"},
		"sparkUIOptions": {"servicePort": 4045, "ingressAnnotations": {"a": "b"}},
		"driverIngressOptions": [{"servicePort": 8080, "ingressURLFormat": "{{$appName}}.example"}]
	}`
	richFlink := `{
		"flinkVersion": "v1_20", "imagePullPolicy": "Always", "restartNonce": 2, "logConfiguration": {"log4j-console.properties": "rootLogger.level = INFO"},
		"flinkConfiguration": {"state.checkpoints.dir": "file:///cp", "execution": {"checkpointing": {"interval": "10s"}}},
		"job": {"entryClass": "org.example.Main", "args": ["--a"], "upgradeMode": "savepoint", "allowNonRestoredState": true},
		"jobManager": {"resource": {"cpu": 1, "memory": "2048m"}, "replicas": 1, "podTemplate": {"metadata": {"labels": {"t": "jm"}}}},
		"podTemplate": {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "n"}}}
	}`
	adminFlink := `{
		"serviceAccount": "flink", "ingress": {"template": "{{name}}.flink.example", "className": "nginx"},
		"podTemplate": {"spec": {"containers": [{"name": "flink-main-container", "env": [{"name": "A", "value": "1"}]}]}}
	}`
	admin := JobPolicy{
		AllowSpark: []string{"volumes", "driver.volumeMounts", "driver.serviceAccount", "sparkUIOptions", "driverIngressOptions"},
		AllowFlink: []string{"serviceAccount", "ingress", "podTemplate.spec"},
	}
	for _, shape := range []struct {
		name      string
		framework v1alpha1.Framework
		wrapped   string
		policy    JobPolicy
	}{
		{"spark-plain", v1alpha1.FrameworkSpark, "", JobPolicy{}},
		{"spark-every-default-field", v1alpha1.FrameworkSpark, richSpark, JobPolicy{}},
		{"spark-admin-fields", v1alpha1.FrameworkSpark, adminSpark, admin},
		{"spark-suspended-fails", v1alpha1.FrameworkSpark, "", JobPolicy{}},
		{"flink-plain", v1alpha1.FrameworkFlink, "", JobPolicy{}},
		{"flink-every-default-field", v1alpha1.FrameworkFlink, richFlink, JobPolicy{}},
		{"flink-admin-fields", v1alpha1.FrameworkFlink, adminFlink, admin},
	} {
		t.Run(shape.name, func(t *testing.T) {
			r := run(shape.framework)
			r.Job.Name, r.Policy = shape.name, shape.policy
			if shape.name == "spark-suspended-fails" {
				r.Job.Spec.SuspendedOutcome = v1alpha1.RunFailed
			}
			var obj client.Object
			var err error
			if shape.framework == v1alpha1.FrameworkSpark {
				if shape.wrapped != "" {
					r.Job.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(shape.wrapped)}
				}
				obj, err = Spark(r)
			} else {
				if shape.wrapped != "" {
					r.Job.Spec.FlinkDeployment = &runtime.RawExtension{Raw: []byte(shape.wrapped)}
				}
				obj, err = Flink(r)
			}
			require.NoError(t, err)
			createsAsIs(t, cl, warned, obj, strict)
		})
	}

	// The operators' documented fields, as a user's manifest has them.
	for _, file := range []string{"testdata/sparkapplication-documented-fields.yaml", "testdata/flinkdeployment-documented-fields.yaml"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var u unstructured.Unstructured
			require.NoError(t, yaml.Unmarshal(data, &u.Object))
			createsAsIs(t, cl, warned, &u, strict)
		})
	}

	// A field the operators do not have is refused, not dropped.
	t.Run("an unknown field", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication", "metadata": map[string]any{"name": "typo", "namespace": "default"},
			"spec": map[string]any{"type": "Scala", "sparkVersion": "3.5.3", "mode": "cluster", "mainApplicationFile": "local:///a.jar",
				"driver": map[string]any{"coers": 1}, "executor": map[string]any{}},
		}}
		err := cl.Create(ctx, u, strict)
		require.ErrorContains(t, err, `unknown field "spec.driver.coers"`)
	})
}

// createsAsIs creates obj strictly, expects no warning, and reads back the same spec.
func createsAsIs(t *testing.T, cl client.Client, warned *warnings, obj client.Object, opts client.CreateOption) {
	t.Helper()
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: want}
	if u.GetAPIVersion() == "" {
		gvk, err := cl.GroupVersionKindFor(obj)
		require.NoError(t, err)
		u.SetGroupVersionKind(gvk)
	}
	sent, err := json.Marshal(want["spec"])
	require.NoError(t, err)
	require.NoError(t, cl.Create(context.Background(), u, opts), "created strictly")
	require.Empty(t, warned.take(), "the API server warned")
	back := &unstructured.Unstructured{}
	back.SetGroupVersionKind(u.GroupVersionKind())
	require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(u), back))
	got, err := json.Marshal(back.Object["spec"])
	require.NoError(t, err)
	require.JSONEq(t, string(sent), string(got), "the spec read back is the spec sent: nothing was pruned")
	for k, v := range u.GetAnnotations() {
		require.Equal(t, v, back.GetAnnotations()[k], k)
	}
}
