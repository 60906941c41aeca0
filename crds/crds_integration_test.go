//go:build integration

package crds_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"slotplane/internal/localplatform/localcluster"
)

// The valid objects of every kind the project installs: each must be accepted as written.
var valid = map[string]string{
	"testbed": `
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bed}
spec:
  nodeLabel: slotplane.io/node
  slotsPerNode: 4
  resourcesPerSlot: {cpu: "2", memory: 4Gi}
`,
	"testbed with a granted slot timeout": `
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bed-timed}
spec:
  nodeLabel: slotplane.io/node
  slotsPerNode: 4
  resourcesPerSlot: {cpu: "2", memory: 4Gi}
  grantedSlotTimeout: 30s
`,
	"spark job": `
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: wordcount}
spec:
  framework: spark
  queue: root.analytics
  user: alice
  application:
    image: apache/spark:3.5.3
    type: Scala
    mainClass: org.apache.spark.examples.JavaWordCount
    mainApplicationFile: local:///opt/spark/examples/jars/spark-examples.jar
    arguments: [/data/words.txt]
    dataset: hdfs://namenode/data/words.txt
  driverResources: {cpu: "1", memory: 2Gi}
  sparkApplication:
    sparkConf: {spark.eventLog.enabled: "false"}
    restartPolicy: {type: Never}
`,
	"flink job": `
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: top-speed}
spec:
  framework: flink
  application:
    image: flink:1.20
    version: v1_20
    mainApplicationFile: local:///opt/flink/examples/streaming/TopSpeedWindowing.jar
  flinkDeployment:
    flinkConfiguration: {taskmanager.numberOfTaskSlots: "1"}
`,
	"slot-based scheduling": `
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: slots}
spec:
  testBed: bed
  mode: SlotBased
  jobs:
  - {name: wordcount, replication: 2, slotIDs: [0, 5]}
  - {name: top-speed, replication: 1, slotIDs: [0]}
`,
	"queue-based scheduling": `
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: queue}
spec:
  testBed: bed
  mode: QueueBased
  queue: root.batch
  jobs:
  - {name: wordcount, replication: 3}
`,
	"spark application": `
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: wordcount-1}
spec:
  type: Scala
  mode: cluster
  sparkVersion: 3.5.3
  image: apache/spark:3.5.3
  mainClass: org.apache.spark.examples.JavaWordCount
  mainApplicationFile: local:///opt/spark/examples/jars/spark-examples.jar
  arguments: [/data/words.txt]
  restartPolicy: {type: Never}
  driver: {cores: 1, memory: 2g, serviceAccount: spark}
  executor:
    instances: 2
    cores: 2
    memory: 4g
    schedulerName: slot-scheduler
    priorityClassName: slotplane-batch
    labels: {slotplane.io/job: wordcount}
    annotations: {slotplane.io/slot-ids: "0,5"}
`,
	"flink deployment": `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: top-speed-1}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  flinkConfiguration: {taskmanager.numberOfTaskSlots: "1"}
  jobManager: {resource: {cpu: 1, memory: 2048m}}
  taskManager:
    replicas: 1
    resource: {cpu: 2, memory: 4096m}
  job:
    jarURI: local:///opt/flink/examples/streaming/TopSpeedWindowing.jar
    parallelism: 1
    upgradeMode: stateless
`,
}

// Each invalid object, with the message the API server must answer.
var invalid = map[string]struct{ manifest, message string }{
	"no slots per node": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: rack, slotsPerNode: 0, resourcesPerSlot: {cpu: "1", memory: 1Gi}}
`, "slotsPerNode must be at least 1"},
	"slot without memory": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: rack, slotsPerNode: 1, resourcesPerSlot: {cpu: "1"}}
`, "resourcesPerSlot must give both cpu and memory"},
	"zero-sized slot": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: rack, slotsPerNode: 1, resourcesPerSlot: {cpu: "0", memory: 1Gi}}
`, "every quantity in resourcesPerSlot must be greater than zero"},
	"granted slot timeout below a second": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: rack, slotsPerNode: 1, resourcesPerSlot: {cpu: "1", memory: 1Gi}, grantedSlotTimeout: 500ms}
`, "grantedSlotTimeout must be between 1s and 24h"},
	"negative granted slot timeout": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: rack, slotsPerNode: 1, resourcesPerSlot: {cpu: "1", memory: 1Gi}, grantedSlotTimeout: -5m}
`, "grantedSlotTimeout must be between 1s and 24h"},
	"granted slot timeout over a day": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: rack, slotsPerNode: 1, resourcesPerSlot: {cpu: "1", memory: 1Gi}, grantedSlotTimeout: 25h}
`, "grantedSlotTimeout must be between 1s and 24h"},
	"granted slot timeout not a duration": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: rack, slotsPerNode: 1, resourcesPerSlot: {cpu: "1", memory: 1Gi}, grantedSlotTimeout: soon}
`, "grantedSlotTimeout"},
	"node label not a label key": {`
apiVersion: slotplane.io/v1alpha1
kind: TestBed
metadata: {name: bad}
spec: {nodeLabel: "bad label!", slotsPerNode: 1, resourcesPerSlot: {cpu: "1", memory: 1Gi}}
`, "nodeLabel must be a valid label key"},
	"slot-based job without slot ids": {`
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: bad}
spec: {testBed: bed, mode: SlotBased, jobs: [{name: a, replication: 1}]}
`, "every job of a SlotBased scheduling needs slotIDs"},
	"slot ids not matching replication": {`
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: bad}
spec: {testBed: bed, mode: SlotBased, jobs: [{name: a, replication: 2, slotIDs: [1]}]}
`, "a job of a SlotBased scheduling needs exactly as many slotIDs as its replication"},
	"queue-based job with slot ids": {`
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: bad}
spec: {testBed: bed, mode: QueueBased, jobs: [{name: a, replication: 1, slotIDs: [1]}]}
`, "slotIDs are only allowed in a SlotBased scheduling"},
	"zero replication": {`
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: bad}
spec: {testBed: bed, mode: QueueBased, jobs: [{name: a, replication: 0}]}
`, "replication must be at least 1"},
	"unknown mode": {`
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: bad}
spec: {testBed: bed, mode: Random, jobs: [{name: a, replication: 1}]}
`, `Unsupported value: "Random": supported values: "SlotBased", "QueueBased"`},
	"job listed twice": {`
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: bad}
spec: {testBed: bed, mode: QueueBased, jobs: [{name: a, replication: 1}, {name: a, replication: 2}]}
`, `spec.jobs[1]: Duplicate value: {"name":"a"}`},
	"empty scheduling": {`
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata: {name: bad}
spec: {testBed: bed, mode: QueueBased, jobs: []}
`, "spec.jobs: Invalid value: 0: spec.jobs in body should have at least 1 items"},
	"spark template on a flink job": {`
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: bad}
spec:
  framework: flink
  application: {image: flink, mainApplicationFile: a.jar}
  sparkApplication: {mode: cluster}
`, "sparkApplication is only allowed when framework is spark"},
	"spark type on a flink job": {`
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: bad}
spec: {framework: flink, application: {image: flink, type: Java, mainApplicationFile: a.jar}}
`, "application.type is only allowed when framework is spark"},
	"queue with an empty segment": {`
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: bad}
spec: {framework: spark, queue: root..a, application: {image: spark, mainApplicationFile: a.jar}}
`, "queue must be a dotted path"},
	"unknown framework": {`
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: bad}
spec: {framework: storm, application: {image: storm, mainApplicationFile: a.jar}}
`, `Unsupported value: "storm": supported values: "spark", "flink"`},
	"no image": {`
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: bad}
spec: {framework: spark, application: {image: "", mainApplicationFile: a.jar}}
`, "spec.application.image: Invalid value: \"\": spec.application.image in body should be at least 1 chars long"},
}

func TestCRDs_OnTheRealAPIServer(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{})
	ctx := context.Background()
	cl, err := client.New(c.Config, client.Options{})
	require.NoError(t, err)

	t.Run("valid objects are accepted", func(t *testing.T) {
		for name, manifest := range valid {
			obj := parse(t, manifest)
			obj.SetNamespace("default")
			require.NoError(t, cl.Create(ctx, obj), name)
			got := parse(t, manifest)
			require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(obj), got), name)
			want, err := json.Marshal(parse(t, manifest).Object["spec"])
			require.NoError(t, err)
			have, err := json.Marshal(got.Object["spec"])
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(have), "%s: the API server changed or pruned the spec", name)
		}
	})

	t.Run("invalid objects are rejected with a clear message", func(t *testing.T) {
		for name, tc := range invalid {
			t.Run(name, func(t *testing.T) {
				obj := parse(t, tc.manifest)
				obj.SetNamespace("default")
				err := cl.Create(ctx, obj)
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.message)
			})
		}
	})

	t.Run("a new batch job reads as Ready", func(t *testing.T) {
		job := parse(t, valid["spark job"])
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "wordcount"}, job))
		state, _, _ := unstructured.NestedString(job.Object, "status", "state")
		require.Equal(t, "Ready", state)
	})

	t.Run("immutable fields cannot change", func(t *testing.T) {
		cases := map[string]struct {
			manifest, name, field string
			value                 any
			message               string
		}{
			"framework": {valid["spark job"], "wordcount", "framework", "flink", "framework is immutable"},
			"mode":      {valid["queue-based scheduling"], "queue", "mode", "SlotBased", "mode is immutable"},
			"test bed":  {valid["queue-based scheduling"], "queue", "testBed", "other", "testBed is immutable"},
			"a time to live added later": {valid["queue-based scheduling"], "queue", "ttlSecondsAfterFinished", int64(60),
				"ttlSecondsAfterFinished is immutable"},
		}
		for name, tc := range cases {
			obj := parse(t, tc.manifest)
			require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: tc.name}, obj))
			require.NoError(t, unstructured.SetNestedField(obj.Object, tc.value, "spec", tc.field))
			err := cl.Update(ctx, obj)
			require.Error(t, err, name)
			require.Contains(t, err.Error(), tc.message, name)
		}
	})

	t.Run("a scheduling can be extended with more jobs", func(t *testing.T) {
		obj := parse(t, valid["queue-based scheduling"])
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "queue"}, obj))
		jobs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "jobs")
		jobs = append(jobs, map[string]any{"name": "top-speed", "replication": int64(1)})
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, jobs, "spec", "jobs"))
		require.NoError(t, cl.Update(ctx, obj))
	})

	// Queue is the queue the job is in now (status.queue, which Admission writes once it
	// placed the job: none yet here); the one it asks for is the wide column Requested.
	t.Run("kubectl get shows state, queue and age", func(t *testing.T) {
		table := getTable(t, c.Config, "/apis/slotplane.io/v1alpha1/namespaces/default/batchjobs")
		var columns []string
		for _, col := range table.ColumnDefinitions {
			columns = append(columns, col.Name)
		}
		require.Subset(t, columns, []string{"Name", "Framework", "State", "Queue", "Requested", "Reason", "Scheduling", "Age"})
		var wordcount map[string]any
		for _, row := range table.Rows {
			if row.Cells[0] == "wordcount" {
				wordcount = map[string]any{}
				for i, col := range columns {
					wordcount[col] = row.Cells[i]
				}
			}
		}
		require.NotNil(t, wordcount, "no row for wordcount")
		require.Equal(t, "spark", wordcount["Framework"])
		require.Equal(t, "Ready", wordcount["State"])
		require.Nil(t, wordcount["Queue"], "in no queue until Admission places it")
		require.Equal(t, "root.analytics", wordcount["Requested"])
	})
}

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &obj.Object))
	return obj
}

// getTable asks the API server for the table kubectl prints.
func getTable(t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var table metav1.Table
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&table))
	return &table
}
