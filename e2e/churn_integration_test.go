//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/standin"
	"slotplane/internal/slotslices"
	"slotplane/slots"
)

// podLedger watches the test bed's pods and checks, at every event, that no slot is held by
// two live pods (running, not being deleted): a ghost holds its slot by its node and
// position on the node, an executor by its proven claim. An executor running on
// another node than its slot's is a violation too. The layout (follow) comes from the
// TestBed's status: positions move only while no job holds a slot (slots.Relayout), so the
// newest layout is right for every live executor.
type podLedger struct {
	mu         sync.Mutex
	place      map[string]int32 // node/position-on-node -> slot position
	nodeOf     map[int32]string
	perNode    int                    // slots on each node
	pods       map[string]*corev1.Pod // by uid
	violations []string               // each told once, in the order first seen
	told       map[string]bool
	checks     int
}

// follow takes the bed's newest layout.
func (l *podLedger) follow(layout []v1alpha1.SlotStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.place)
	clear(l.nodeOf)
	for _, s := range layout {
		l.place[s.NodeName+"/"+strconv.Itoa(int(s.PositionOnNode))] = s.Position
		l.nodeOf[s.Position] = s.NodeName
	}
}

func (l *podLedger) violate(msg string) {
	if !l.told[msg] {
		l.told[msg] = true
		l.violations = append(l.violations, msg)
	}
}

func (l *podLedger) apply(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(l.pods, string(p.UID))
		return
	}
	l.pods[string(p.UID)] = p
	l.checks++
	holder := map[int32]*corev1.Pod{}
	onNode := map[string]int{}
	for _, q := range l.pods {
		if q.Status.Phase != corev1.PodRunning || q.DeletionTimestamp != nil || q.Spec.NodeName == "" {
			continue
		}
		var pos int32
		if q.Labels[v1alpha1.GhostLabel] == "true" {
			at, ok := l.place[q.Spec.NodeName+"/"+q.Labels[v1alpha1.PositionOnNodeLabel]]
			if !ok {
				continue
			}
			pos = at
		} else if at, ok := slots.ProvenSlot(q); ok {
			pos = at
			if node := l.nodeOf[pos]; node != q.Spec.NodeName {
				l.violate(fmt.Sprintf("pod %s holds slot %d of node %s but runs on %s", q.Name, pos, node, q.Spec.NodeName))
			}
		} else {
			continue
		}
		onNode[q.Spec.NodeName]++
		if onNode[q.Spec.NodeName] > l.perNode {
			l.violate(fmt.Sprintf("node %s runs more slot pods than it has slots (%s among them)", q.Spec.NodeName, q.Name))
		}
		other, taken := holder[pos]
		holder[pos] = q
		if !taken {
			continue
		}
		a, b := other.Name, q.Name
		if a > b {
			a, b = b, a
		}
		l.violate(fmt.Sprintf("slot %d held by %s and %s at once", pos, a, b))
	}
}

// Churn around running jobs: node labels flipped every few hundred milliseconds (every
// flip makes the test bed's workflow pass over the bed again, racing the extender's status
// writes), and executors and ghosts deleted at random (Spark asks for lost executors again,
// which must find their own slots; the ghost reconciler makes lost ghosts again). 20 jobs of
// 8 executors run on the 8 slots one after another. A watch on the pods sees, at every
// event, no node with more live slot pods than slots, no slot held by two live pods (two
// jobs' pods, or a pod and a ghost), no executor off its slot's node; and every job
// completes, once.
func TestE2E_ChurnNeverDoubleBooksASlot(t *testing.T) {
	t.Parallel() // its checks are invariants, not timings: it may share the machine
	p := startE2E(t, `<allocations><queue name="batch"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	tb, err := p.api.GetTestBed(ctx, "bed")
	require.NoError(t, err)
	ledger := &podLedger{place: map[string]int32{}, nodeOf: map[int32]string{}, pods: map[string]*corev1.Pod{}, told: map[string]bool{}, perNode: int(p.slots) / 4}
	ledger.follow(tb.Status.Slots)
	go func() {
		for ctx.Err() == nil {
			var bed v1alpha1.TestBed
			if p.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bed"}, &bed) == nil {
				if slots, err := slotslices.Read(ctx, p.kube, &bed); err == nil {
					ledger.follow(slots)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	cs, err := kubernetes.NewForConfig(p.config)
	require.NoError(t, err)
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: v1alpha1.TestBedLabel + "=bed"})
	require.NoError(t, err)
	defer w.Stop()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			ledger.apply(ev)
		}
	}()

	const jobs, executors = 20, 8
	var entries []v1alpha1.SchedulingJob
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("churn-%02d", i)
		_, err := p.api.CreateJob(ctx, apitypes.JobRequest{Name: names[i], Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
			Application:     v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Annotations:     map[string]string{standin.SimDurationAnnotation: "2s"}})
		require.NoError(t, err, names[i])
		entries = append(entries, v1alpha1.SchedulingJob{Name: names[i], Replication: executors})
	}
	_, err = p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "churn", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch", Jobs: entries})
	require.NoError(t, err)

	// The churn, until the Scheduling ends.
	churned := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		out := ""      // the node that lost the bed's label, if any
		defer func() { // the bed whole again, for the checks after
			var n corev1.Node
			if out != "" && p.kube.Get(context.Background(), client.ObjectKey{Name: out}, &n) == nil {
				n.Labels[localcluster.DefaultNodeLabel] = strings.TrimPrefix(out, "node-")
				if err := p.kube.Update(context.Background(), &n); err != nil {
					t.Errorf("give %s its label back: %v", out, err)
				}
			}
		}()
		for flip := 0; ; flip++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s, err := p.api.GetScheduling(ctx, "churn")
			if err == nil && (s.Status.State == v1alpha1.SchedulingCompleted || s.Status.State == v1alpha1.SchedulingFailed) {
				return
			}
			switch rng.IntN(4) {
			case 3:
				// The bed's own label: a node leaves the bed, and comes back on a later tick.
				// The slots its running job holds stay where they are meanwhile.
				name := out
				if name == "" {
					name = fmt.Sprintf("node-%02d", rng.IntN(4))
				}
				var n corev1.Node
				if p.kube.Get(ctx, client.ObjectKey{Name: name}, &n) != nil {
					continue
				}
				if out == "" {
					delete(n.Labels, localcluster.DefaultNodeLabel)
				} else {
					n.Labels[localcluster.DefaultNodeLabel] = strings.TrimPrefix(name, "node-")
				}
				if p.kube.Update(ctx, &n) == nil {
					if out == "" {
						out = name
						churned["node left the bed"]++
					} else {
						out = ""
						churned["node came back"]++
					}
				}
			case 0:
				var n corev1.Node
				if p.kube.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("node-%02d", rng.IntN(4))}, &n) == nil {
					if n.Labels == nil {
						n.Labels = map[string]string{}
					}
					n.Labels["example.com/churn"] = strconv.Itoa(flip)
					if p.kube.Update(ctx, &n) == nil {
						churned["node label flipped"]++
					}
				}
			case 1, 2:
				ghost := rng.IntN(2) == 0
				var pods corev1.PodList
				sel := client.MatchingLabels{v1alpha1.TestBedLabel: "bed"}
				if p.kube.List(ctx, &pods, client.InNamespace("default"), sel) != nil {
					continue
				}
				var pick []corev1.Pod
				for _, q := range pods.Items {
					if (q.Labels[v1alpha1.GhostLabel] == "true") == ghost && q.DeletionTimestamp == nil && q.Status.Phase == corev1.PodRunning {
						pick = append(pick, q)
					}
				}
				if len(pick) == 0 {
					continue
				}
				victim := pick[rng.IntN(len(pick))]
				if p.kube.Delete(ctx, &victim, client.GracePeriodSeconds(0)) == nil {
					if ghost {
						churned["ghost deleted"]++
					} else {
						churned["executor deleted"]++
					}
				}
			}
		}
	}()

	require.Eventually(t, func() bool {
		s, err := p.api.GetScheduling(ctx, "churn")
		return err == nil && (s.Status.State == v1alpha1.SchedulingCompleted || s.Status.State == v1alpha1.SchedulingFailed)
	}, 10*time.Minute, 500*time.Millisecond, "the Scheduling never ended")
	<-done
	t.Logf("churn: %v", churned)
	require.Positive(t, churned["executor deleted"], "the churn deleted no executor")

	s, err := p.api.GetScheduling(ctx, "churn")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.SchedulingCompleted, s.Status.State, s.Status.Message)
	var apps sparkv1beta2.SparkApplicationList
	require.NoError(t, p.kube.List(ctx, &apps, client.InNamespace("default")))
	perJob := map[string]int{}
	for _, a := range apps.Items {
		perJob[a.Labels[v1alpha1.BatchJobLabel]]++
	}
	for _, name := range names {
		j, err := p.api.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s: %s", name, j.Status.Message)
		require.Equal(t, int32(1), j.Status.Run, name)
		require.Equal(t, 1, perJob[name], "%s has exactly one application", name)
	}
	p.waitSlotsFree(t, 2*time.Minute)

	cancel()
	<-watched
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	t.Logf("the pod watch checked %d events", ledger.checks)
	require.Positive(t, ledger.checks)
	require.Empty(t, ledger.violations)
}
