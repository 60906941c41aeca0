package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/slots"
)

// memoryCache serves one TestBed, its slot slices, pods and BatchJobs the way the
// extender's informer cache does (no deep copy of TestBeds and slot slices, deep copies of
// everything else, pods and BatchJob metadata narrowed as the cache stores them, the ghost
// field index), so a benchmark measures the handler.
type memoryCache struct {
	bed    *v1alpha1.TestBed
	slices []v1alpha1.SlotSlice
	// last is the bed's last slot.
	last   v1alpha1.SlotStatus
	ghosts map[string]corev1.Pod // by GhostIndex value
	pods   map[client.ObjectKey]*corev1.Pod
	jobs   map[client.ObjectKey]*metav1.PartialObjectMetadata
}

// addPod stores what the extender's cache keeps of p.
func (m *memoryCache) addPod(p *corev1.Pod) {
	stored, _ := slotPodView(p.DeepCopy())
	m.pods[client.ObjectKeyFromObject(p)] = stored.(*corev1.Pod)
}

// addJob stores what the extender's cache keeps of j: its metadata, narrowed.
func (m *memoryCache) addJob(j *v1alpha1.BatchJob) {
	meta := batchJobMeta()
	j.ObjectMeta.DeepCopyInto(&meta.ObjectMeta)
	stored, _ := grantView(meta)
	m.jobs[client.ObjectKeyFromObject(j)] = stored.(*metav1.PartialObjectMetadata)
}

func (m *memoryCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *v1alpha1.TestBed:
		if key.Name == m.bed.Name && key.Namespace == m.bed.Namespace {
			*o = *m.bed
			return nil
		}
	case *corev1.Pod:
		if p, ok := m.pods[key]; ok {
			p.DeepCopyInto(o) // as the informer cache does for pods
			return nil
		}
	case *metav1.PartialObjectMetadata:
		if j, ok := m.jobs[key]; ok && o.GroupVersionKind() == j.GroupVersionKind() {
			j.DeepCopyInto(o)
			return nil
		}
	}
	return fmt.Errorf("memoryCache has no %T %s", obj, key)
}

func (m *memoryCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	if sl, ok := list.(*v1alpha1.SlotSliceList); ok {
		sl.Items = append(sl.Items[:0], m.slices...) // shallow copies, as without deep copy
		return nil
	}
	pods, ok := list.(*corev1.PodList)
	if !ok {
		return fmt.Errorf("memoryCache lists pods only, not %T", list)
	}
	pods.Items = pods.Items[:0]
	if o.FieldSelector != nil {
		key, ok := o.FieldSelector.RequiresExactMatch(GhostIndex)
		if g, found := m.ghosts[key]; ok && found {
			pods.Items = append(pods.Items, g)
		}
		return nil
	}
	for _, g := range m.ghosts {
		if o.LabelSelector == nil || o.LabelSelector.Matches(labels.Set(g.Labels)) {
			pods.Items = append(pods.Items, g)
		}
	}
	for _, p := range m.pods {
		if o.LabelSelector == nil || o.LabelSelector.Matches(labels.Set(p.Labels)) {
			pods.Items = append(pods.Items, *p.DeepCopy())
		}
	}
	return nil
}

// recordingClient stands in for the API server: it records label patches and ghost
// deletions, and takes slot slice writes (a new resourceVersion each) or, with failWrites,
// fails them, without any I/O. The embedded client is nil, so any other call panics: the
// paths benchmarked make none.
type recordingClient struct {
	client.Client
	failWrites                     bool
	mu                             sync.Mutex
	patches, deletes, sliceUpdates int
	lastPatch                      []byte
	rv                             int
}

func (c *recordingClient) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	data, err := patch.Data(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.patches++
	c.lastPatch = data
	return err
}

func (c *recordingClient) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes++
	return nil
}

func (c *recordingClient) count() (patches, deletes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.patches, c.deletes
}

func (c *recordingClient) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sliceUpdates++
	if c.failWrites {
		return errors.New("the API server is away")
	}
	c.rv++
	obj.SetResourceVersion(strconv.Itoa(1000 + c.rv))
	return nil
}

// The bench's test bed: 1,000 nodes x 8 slots. Nodes 0-499 are full, every slot occupied by
// a running pod of some other job; job spark-pi holds the 64 slots of nodes 992-999, and its
// executor "held" holds the last of them.
const (
	benchNodes, benchPerNode = 1000, 8
	benchJob                 = "spark-pi"
)

// benchBed builds the bed, its running pods and ghosts. Every free slot but the job's has a
// ghost: the slots of a job whose run has not ended have none (the ghost reconciler deleted
// them when the job was created), and that of the held slot went in the preemption.
func benchBed() (*memoryCache, []string) {
	in := make([]slots.Node, benchNodes)
	names := make([]string, benchNodes)
	for i := range in {
		names[i] = fmt.Sprintf("node-%04d", i)
		in[i] = slots.Node{Name: names[i], ID: strconv.Itoa(i)}
	}
	statuses := slots.Statuses(slots.Layout(in, benchPerNode), nil)
	m := &memoryCache{
		ghosts: map[string]corev1.Pod{},
		pods:   map[client.ObjectKey]*corev1.Pod{},
		jobs:   map[client.ObjectKey]*metav1.PartialObjectMetadata{},
	}
	jobSlots := map[int32]bool{}
	for _, pos := range benchJobSlots() {
		jobSlots[pos] = true
	}
	for i := range statuses {
		s := &statuses[i]
		node, _ := strconv.Atoi(strings.TrimPrefix(s.NodeName, "node-"))
		switch {
		case node < benchNodes/2:
			p := runningPod(s)
			_ = slots.Reserve(s, slots.Pod{Name: p.Name, UID: p.UID})
			_ = slots.Occupy(s, slots.Pod{Name: p.Name, UID: p.UID})
			m.addPod(p)
		case !jobSlots[s.Position]:
			g := ghostOf(*s)
			m.ghosts[GhostIndexValue(&g)] = g
		}
	}
	last := &statuses[len(statuses)-1]
	_ = slots.Reserve(last, slots.Pod{Name: "held", UID: "held"})
	m.bed = testobjects.TestBed("bed").UID("bed").Obj()
	m.bed.ResourceVersion = "1"
	m.slices = slotslices.Build(m.bed, statuses)
	for i := range m.slices {
		m.slices[i].ResourceVersion = "1"
	}
	m.last = *last
	m.addJob(bigBatchJob())
	m.addPod(heldPod())
	return m, names
}

// heldPod is the executor holding the bed's last slot, labelled by the extender.
func heldPod() *corev1.Pod {
	last := int32(benchNodes*benchPerNode - 1)
	p := executorPod("held", "held", 1)
	p.Annotations[v1alpha1.SlotClaimAnnotation] = slots.SlotClaim(last, "held")
	return p
}

// benchJobSlots are the job's 64 slot ids, node by node (8 on each of nodes 992-999), the
// last one being the held pod's.
func benchJobSlots() []int32 {
	ids := make([]int32, 0, 64)
	for node := int32(benchNodes - 8); node < benchNodes; node++ {
		for k := range int32(benchPerNode) {
			ids = append(ids, node+k*benchNodes) // round-robin: node n holds n, n+1000, ...
		}
	}
	return ids
}

func ghostOf(s v1alpha1.SlotStatus) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("ghost-%s-%d", s.NodeName, s.PositionOnNode), Namespace: "default",
		UID:    types.UID(fmt.Sprintf("g-%d", s.Position)),
		Labels: map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.GhostLabel: "true", v1alpha1.PositionOnNodeLabel: strconv.Itoa(int(s.PositionOnNode))},
	}, Spec: corev1.PodSpec{NodeName: s.NodeName}}
}

// runningPod is another job's executor, running in slot s.
func runningPod(s *v1alpha1.SlotStatus) *corev1.Pod {
	uid := types.UID("u" + strconv.Itoa(int(s.Position)))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p" + strconv.Itoa(int(s.Position)), Namespace: "default", UID: uid,
			Labels:      map[string]string{v1alpha1.TestBedLabel: "bed"},
			Annotations: map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(s.Position, uid)},
		},
		Spec:   corev1.PodSpec{NodeName: s.NodeName},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// executorPod is executor n of job spark-pi as the Spark operator's driver makes it and
// kube-scheduler sends it (defaults and admission plugins applied, managed fields stripped):
// about 4 KB of JSON.
func executorPod(name string, uid types.UID, n int) *corev1.Pod {
	const app, appID = "spark-pi-1-1", "spark-5d2c1e0a9b7f4f3e8a1d6c2b9e0f7a31"
	nodes := make([]string, 0, 8)
	for node := benchNodes - 8; node < benchNodes; node++ {
		nodes = append(nodes, fmt.Sprintf("node-%04d", node))
	}
	terms := make([]corev1.NodeSelectorTerm, len(nodes))
	for i, node := range nodes {
		terms[i] = corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
		}}}
	}
	slot := resource.MustParse("1")
	mem := resource.MustParse("4096Mi")
	grace, priority, yes := int64(30), int32(1000), true
	tolerate := int64(300)
	env := []corev1.EnvVar{
		{Name: "SPARK_USER", Value: "spark"},
		{Name: "SPARK_DRIVER_URL", Value: "spark://CoarseGrainedScheduler@" + app + "-driver-svc.default.svc:7078"},
		{Name: "SPARK_EXECUTOR_CORES", Value: "2"},
		{Name: "SPARK_EXECUTOR_MEMORY", Value: "3686m"},
		{Name: "SPARK_APPLICATION_ID", Value: appID},
		{Name: "SPARK_CONF_DIR", Value: "/opt/spark/conf"},
		{Name: "SPARK_EXECUTOR_ID", Value: strconv.Itoa(n)},
		{Name: "SPARK_RESOURCE_PROFILE_ID", Value: "0"},
		{Name: "SPARK_EXECUTOR_POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "SPARK_EXECUTOR_POD_NAME", Value: name},
		{Name: "SPARK_JAVA_OPT_0", Value: "-Dspark.driver.port=7078"},
		{Name: "SPARK_JAVA_OPT_1", Value: "-Dspark.driver.blockManager.port=7079"},
		{Name: "SPARK_LOCAL_DIRS", Value: "/var/data/spark-0c4f7e2a-3b1d-4c5e-9f6a-7b8c9d0e1f2a"},
		{Name: "SLOTPLANE_DATASET", Value: "s3a://datasets/taxi/2025/"},
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: uid, ResourceVersion: "48213",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
			Labels: map[string]string{
				v1alpha1.TestBedLabel: "bed", v1alpha1.BatchJobLabel: benchJob, v1alpha1.ActiveSchedulingLabel: "nightly",
				"spark-role": "executor", "spark-app-name": app, "spark-app-selector": appID,
				"spark-exec-id": strconv.Itoa(n), "spark-exec-resourceprofile-id": "0",
				"sparkoperator.k8s.io/app-name": app, "sparkoperator.k8s.io/launched-by-spark-operator": "true",
				"sparkoperator.k8s.io/submission-id": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
			},
			Annotations: map[string]string{v1alpha1.SlotIDsAnnotation: slots.FormatSlotIDs(benchJobSlots())},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: app + "-driver", UID: "5b7c9d1e-2f3a-4b5c-8d6e-7f8091a2b3c4", Controller: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "spark-local-dir-1", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "spark-conf-volume-exec", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "spark-exec-" + appID[6:22] + "-conf-map"},
				}}},
			},
			Containers: []corev1.Container{{
				Name: "spark-kubernetes-executor", Image: "apache/spark:3.5.3", Args: []string{"executor"},
				Ports: []corev1.ContainerPort{{Name: "spark-ui", ContainerPort: 4040, Protocol: corev1.ProtocolTCP}},
				Env:   env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: mem, v1alpha1.SlotResource: slot},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: mem, v1alpha1.SlotResource: slot},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "spark-local-dir-1", MountPath: "/var/data/spark-0c4f7e2a-3b1d-4c5e-9f6a-7b8c9d0e1f2a"},
					{Name: "spark-conf-volume-exec", MountPath: "/opt/spark/conf"},
				},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			Hostname:                      name,
			SecurityContext:               &corev1.PodSecurityContext{},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
			}},
			SchedulerName: v1alpha1.SlotSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: v1alpha1.TestBedTaint, Operator: corev1.TolerationOpExists},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &tolerate},
			},
			PriorityClassName:  v1alpha1.BatchPriorityClass,
			Priority:           &priority,
			EnableServiceLinks: &yes,
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message:            "0/1000 nodes are available: 992 the node holds none of the pod's slots, 8 Insufficient slotplane.io/slot.",
				LastTransitionTime: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC)),
			}},
			NominatedNodeName: nodes[len(nodes)-1],
			QOSClass:          corev1.PodQOSBurstable,
		},
	}
}

// bigBatchJob is spark-pi as a user applies it with kubectl: a wrapped Spark spec, and the
// whole object again in the last-applied annotation.
func bigBatchJob() *v1alpha1.BatchJob {
	conf := map[string]string{}
	for i := range 40 {
		conf[fmt.Sprintf("spark.sql.custom.setting%02d", i)] = strings.Repeat("v", 40)
	}
	spark, _ := json.Marshal(map[string]any{
		"sparkConf": conf,
		"driver":    map[string]any{"labels": map[string]string{"team": "analytics"}, "env": []map[string]string{{"name": "A", "value": strings.Repeat("a", 200)}}},
		"executor":  map[string]any{"labels": map[string]string{"team": "analytics"}, "env": []map[string]string{{"name": "B", "value": strings.Repeat("b", 200)}}},
		"hadoopConf": map[string]string{
			"fs.s3a.endpoint": "http://minio.storage:9000", "fs.s3a.path.style.access": "true",
		},
	})
	job := &v1alpha1.BatchJob{
		ObjectMeta: metav1.ObjectMeta{Name: benchJob, Namespace: "default", UID: "job-uid", ResourceVersion: "48000",
			Labels: map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly", v1alpha1.GrantedTestBedLabel: "bed"}},
		Spec: v1alpha1.BatchJobSpec{
			Framework: v1alpha1.FrameworkSpark,
			Application: v1alpha1.Application{
				Image: "registry.example.com/analytics/spark-pi:2026.03", MainClass: "org.apache.spark.examples.SparkPi",
				MainApplicationFile: "local:///opt/spark/examples/jars/spark-examples.jar", Arguments: []string{"100000"},
				Dataset: "s3a://datasets/taxi/2025/",
			},
			Queue: "root.analytics.nightly", User: "alice", Groups: []string{"analytics", "spark-users"},
			SparkApplication: &runtime.RawExtension{Raw: spark},
		},
		Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Scheduling: "nightly", TestBed: "bed", Slots: benchJobSlots(), Run: 1},
	}
	applied, _ := json.Marshal(job)
	granted := metav1.NewMicroTime(time.Unix(1_780_000_000, 0))
	request, _ := json.Marshal(v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: "sched-uid", TestBed: "bed", Slots: benchJobSlots(), Run: 1, GrantedAt: &granted})
	job.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied), v1alpha1.CreationRequestAnnotation: string(request)}
	return job
}

func newBenchHandler(b *testing.B, m *memoryCache, cl client.Client) (*Handler, *Reserver) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	r := NewReserver(ctx, m, cl, slog.New(slog.DiscardHandler))
	return NewHandler(r, slog.New(slog.DiscardHandler), nil), r
}

// serve makes one call; into, if not nil, receives the decoded answer.
func serve(b *testing.B, h http.Handler, path string, body []byte, into any) (answerBytes int) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: HTTP %d", path, rec.Code)
	}
	if into != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			b.Fatal(err)
		}
	}
	return rec.Body.Len()
}

// filterBody is the body kube-scheduler sends with nodeCacheCapable: the whole pod and the
// names of the candidate nodes.
func filterBody(b *testing.B, pod *corev1.Pod, names []string) []byte {
	body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func wantNode(b *testing.B, out extenderv1.ExtenderFilterResult, want string) {
	if out.Error != "" || out.NodeNames == nil || len(*out.NodeNames) != 1 || (*out.NodeNames)[0] != want {
		b.Fatalf("answer %+v, want node %s", out, want)
	}
}

// BenchmarkHandler_Filter is one /filter call as kube-scheduler makes it with
// nodeCacheCapable: a Spark executor pod (64 allowed slot ids) and the names of 1,000
// candidate nodes in, one node out. The pod holds its slot already, which is every /filter
// after a preemption: the slot's ghost is gone, and nothing is written.
func BenchmarkHandler_Filter(b *testing.B) {
	m, names := benchBed()
	cl := &recordingClient{}
	h, _ := newBenchHandler(b, m, cl)
	body := filterBody(b, heldPod(), names)
	want := m.last.NodeName
	var out extenderv1.ExtenderFilterResult
	serve(b, h, "/filter", body, &out)
	wantNode(b, out, want)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, "/filter", body, nil)
	}
	b.ReportMetric(float64(len(body)), "body-bytes")
	if patches, deletes := cl.count(); patches+deletes != 0 {
		b.Fatalf("a held slot wrote %d patches and %d deletions", patches, deletes)
	}
}

// BenchmarkHandler_FilterFirstReservation is the first /filter of an executor: it gets the
// first free slot of its job's list (its siblings took the ones before), and writes nothing
// for the pod (its claim goes into its binding, /bind). The status writes fail, as when the API
// server is away, so that the reservations stay pending and each round of 63 executors
// can be taken back (as their deletion does) outside the timer. The index a status write
// makes the extender rebuild, at most four times a second, is left out.
func BenchmarkHandler_FilterFirstReservation(b *testing.B) {
	m, names := benchBed()
	const perRound = 63 // the job's slots but the held one
	pods := make([]*corev1.Pod, perRound)
	bodies := make([][]byte, perRound)
	for i := range bodies {
		name := "exec-" + strconv.Itoa(i+2)
		pods[i] = executorPod(name, types.UID("uid-"+name), i+2)
		m.addPod(pods[i])
		bodies[i] = filterBody(b, pods[i], names)
	}
	heldBody := filterBody(b, heldPod(), names)
	cl := &recordingClient{failWrites: true}
	h, r := newBenchHandler(b, m, cl)
	takeBack := func() {
		for _, p := range pods {
			r.PodDeleted(p)
		}
		serve(b, h, "/filter", heldBody, nil) // the index, built again
	}
	serve(b, h, "/filter", bodies[0], nil) // the bed's state, seeded
	takeBack()
	var out extenderv1.ExtenderFilterResult
	serve(b, h, "/filter", bodies[0], &out)
	wantNode(b, out, "node-0992") // slot 992, the job's first
	if patches, deletes := cl.count(); patches+deletes != 0 {
		b.Fatalf("/filter wrote %d patches and %d deletes, want none: the claim goes into the binding", patches, deletes)
	}
	b.ReportAllocs()
	i := 1
	for b.Loop() {
		if i == perRound {
			b.StopTimer()
			takeBack()
			i = 0
			b.StartTimer()
		}
		serve(b, h, "/filter", bodies[i], nil)
		i++
	}
	b.ReportMetric(float64(len(bodies[0])), "body-bytes")
}

// BenchmarkHandler_FilterNoSlot is a /filter call for an executor whose 64 slots all hold
// running pods of another job: every candidate fails with its reason. Before the answer,
// the holders of the pod's slots are looked up in the pod informer (none has finished).
func BenchmarkHandler_FilterNoSlot(b *testing.B) {
	m, names := benchBed()
	ids := make([]int32, 0, 64)
	for node := range int32(8) {
		for k := range int32(benchPerNode) {
			ids = append(ids, node+k*benchNodes) // nodes 0-7, all full
		}
	}
	p := executorPod("waiting", "uid-waiting", 99)
	p.Annotations[v1alpha1.SlotIDsAnnotation] = slots.FormatSlotIDs(ids)
	m.addPod(p)
	h, _ := newBenchHandler(b, m, &recordingClient{})
	body := filterBody(b, p, names)
	var out extenderv1.ExtenderFilterResult
	answer := serve(b, h, "/filter", body, &out)
	if out.Error != "" || out.NodeNames == nil || len(*out.NodeNames) != 0 || len(out.FailedNodes) != len(names) {
		b.Fatalf("answer error %q, nodes %v, %d failed nodes; want no node and %d failed", out.Error, out.NodeNames, len(out.FailedNodes), len(names))
	}
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, "/filter", body, nil)
	}
	b.ReportMetric(float64(len(body)), "body-bytes")
	b.ReportMetric(float64(answer), "answer-bytes") // what the scheduler decodes
}

// BenchmarkHandler_Preempt is one /preempt call with the single candidate the slot profile's
// preemption settings produce: the answer names the slot's node and its ghost.
func BenchmarkHandler_Preempt(b *testing.B) {
	m, names := benchBed()
	last := m.last
	ghost := ghostOf(last) // before the preemption, the held slot's ghost still runs
	m.ghosts[GhostIndexValue(&ghost)] = ghost
	h, _ := newBenchHandler(b, m, &recordingClient{})
	args := extenderv1.ExtenderPreemptionArgs{
		Pod:                   heldPod(),
		NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{names[0]: {Pods: []*extenderv1.MetaPod{{UID: "g-0"}}}},
	}
	body, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	var out preemptResult
	serve(b, h, "/preempt", body, &out)
	v := out.NodeNameToMetaVictims[last.NodeName]
	if out.Error != "" || v == nil || len(v.Pods) != 1 || v.Pods[0].UID != string(ghost.UID) {
		b.Fatalf("answer %+v, want ghost %s on %s", out, ghost.UID, last.NodeName)
	}
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, "/preempt", body, nil)
	}
	b.ReportMetric(float64(len(body)), "body-bytes")
}

var _ client.Reader = (*memoryCache)(nil)
