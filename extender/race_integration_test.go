//go:build integration

package extender_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// doubleBookingChecker watches every slot pod for the whole test and records any moment at
// which two live real pods claim the same slot, or a pod runs off its slot's node.
type doubleBookingChecker struct {
	mu         sync.Mutex
	holders    map[string]map[string]string // slot id -> pod uid -> pod name
	violations []string
	stop       func()
	done       chan struct{}
}

func watchDoubleBooking(t *testing.T, e *env) *doubleBookingChecker {
	t.Helper()
	cs := e.cluster.Client()
	w, err := cs.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.TestBedLabel})
	require.NoError(t, err)
	c := &doubleBookingChecker{holders: map[string]map[string]string{}, stop: w.Stop, done: make(chan struct{})}
	nodeOf := map[string]string{}
	for _, s := range e.slots(t) {
		nodeOf[fmt.Sprint(s.Position)] = s.NodeName
	}
	go func() {
		defer close(c.done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || pod.Labels[v1alpha1.GhostLabel] == "true" {
				continue
			}
			c.observe(ev.Type, pod, nodeOf)
		}
	}()
	t.Cleanup(func() {
		c.stop()
		<-c.done
	})
	return c
}

func (c *doubleBookingChecker) observe(kind watch.EventType, pod *corev1.Pod, nodeOf map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid := string(pod.UID)
	for _, h := range c.holders {
		delete(h, uid)
	}
	// Only the extender's record counts as holding a slot (a label alone proves nothing).
	position, proven := slots.ProvenSlot(pod)
	live := kind != watch.Deleted && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	if !proven || !live {
		return
	}
	slot := fmt.Sprint(position)
	if c.holders[slot] == nil {
		c.holders[slot] = map[string]string{}
	}
	c.holders[slot][uid] = pod.Name
	if len(c.holders[slot]) > 1 {
		c.violations = append(c.violations, fmt.Sprintf("slot %s held by %v", slot, c.holders[slot]))
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != nodeOf[slot] {
		c.violations = append(c.violations, fmt.Sprintf("pod %s of slot %s runs on %s, not %s", pod.Name, slot, pod.Spec.NodeName, nodeOf[slot]))
	}
}

func (c *doubleBookingChecker) requireClean(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.violations, "a slot was double-booked")
}

const allSlots = "0,1,2,3,4,5,6,7"

// Nine pods race for eight slots, twenty times over: each slot gets exactly one pod, the
// ninth waits with a reason that names the slots, and no slot ever holds two pods.
func TestExtender_NinePodsRaceForEightSlots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "16")
	checker := watchDoubleBooking(t, e)
	ctx := context.Background()
	for round := range 20 {
		var wg sync.WaitGroup
		for i := range 9 {
			wg.Go(func() {
				require.NoError(t, e.client.Create(ctx, slotPod(fmt.Sprintf("r%d-exec-%d", round, i), allSlots)))
			})
		}
		wg.Wait()

		var running, pending []corev1.Pod
		require.Eventually(t, func() bool {
			running, pending = e.roundPods(t, round)
			return len(running) == 8 && len(pending) == 1 && unschedulableMessage(&pending[0]) != ""
		}, 30*time.Second, 50*time.Millisecond, "round %d: want 8 running and 1 pending", round)
		slotsTaken := map[string]string{}
		for _, p := range running {
			slot := slotOf(&p)
			require.NotContains(t, slotsTaken, slot, "round %d: slot %s given to %s and %s", round, slot, slotsTaken[slot], p.Name)
			slotsTaken[slot] = p.Name
		}
		require.Len(t, slotsTaken, 8)
		require.Contains(t, unschedulableMessage(&pending[0]), "slot", "round %d: the pending pod's reason should name the slots", round)
		checker.requireClean(t)

		for _, p := range append(running, pending...) {
			require.NoError(t, client.IgnoreNotFound(e.client.Delete(ctx, &p, client.GracePeriodSeconds(0))))
		}
		e.waitAllSlotsFree(t)
	}
	checker.requireClean(t)
}

// The extender dies while pods are being placed and comes back: nothing is double-booked,
// and placement resumes.
func TestExtender_RestartMidRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "4")
	checker := watchDoubleBooking(t, e)
	ctx := context.Background()
	for i := range 4 {
		require.NoError(t, e.client.Create(ctx, slotPod(fmt.Sprintf("before-%d", i), allSlots)))
	}
	// Stop while the first pods are in flight; create the rest while it is down.
	time.Sleep(200 * time.Millisecond)
	old := e.extender
	require.NoError(t, old.Stop())
	for i := range 4 {
		require.NoError(t, e.client.Create(ctx, slotPod(fmt.Sprintf("during-%d", i), allSlots)))
	}
	time.Sleep(time.Second)
	e.startExtender(t)

	deadline := time.Now().Add(60 * time.Second)
	for {
		running, pending := e.podsWithPrefix(t, "")
		if len(running) == 8 {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range pending {
				t.Logf("pending %s: %s", p.Name, unschedulableMessage(&p))
			}
			for _, s := range e.slots(t) {
				t.Logf("slot %d on %s: %s %s", s.Position, s.NodeName, s.State, s.PodName)
			}
			t.Fatalf("placement did not resume after the restart: %d running", len(running))
		}
		time.Sleep(100 * time.Millisecond)
	}
	running, _ := e.podsWithPrefix(t, "")
	seen := map[string]bool{}
	for _, p := range running {
		slot := slotOf(&p)
		require.NotEmpty(t, slot, "pod %s runs without a claim", p.Name)
		require.False(t, seen[slot], "slot %s twice", slot)
		seen[slot] = true
	}
	checker.requireClean(t)
}

func (e *env) roundPods(t *testing.T, round int) (running, pending []corev1.Pod) {
	return e.podsWithPrefix(t, fmt.Sprintf("r%d-", round))
}

func (e *env) podsWithPrefix(t *testing.T, prefix string) (running, pending []corev1.Pod) {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, e.client.List(context.Background(), &pods, client.InNamespace("default")))
	for _, p := range pods.Items {
		if p.Labels[v1alpha1.GhostLabel] == "true" || !strings.HasPrefix(p.Name, prefix) || p.DeletionTimestamp != nil {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			running = append(running, p)
		case corev1.PodPending:
			pending = append(pending, p)
		}
	}
	return running, pending
}

func unschedulableMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// slotOf is the position of the slot a pod's claim proves, "" for none.
func slotOf(p *corev1.Pod) string {
	if slot, ok := slots.ProvenSlot(p); ok {
		return strconv.Itoa(int(slot))
	}
	return ""
}

// claimSlot writes on a pod what the extender writes when it reserves a slot for it on the
// preemption path: the claim naming the pod's UID, which exists only once the pod does.
func (e *env) claimSlot(t *testing.T, pod *corev1.Pod, slot int32) {
	t.Helper()
	base := pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[v1alpha1.SlotClaimAnnotation] = slots.SlotClaim(slot, pod.UID)
	require.NoError(t, e.client.Patch(context.Background(), pod, client.MergeFrom(base)))
}

// waitAllSlotsFree waits until the real pods are gone and every slot is free with its ghost.
func (e *env) waitAllSlotsFree(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		running, pending := e.podsWithPrefix(t, "")
		if len(running)+len(pending) > 0 {
			return false
		}
		e.settle(t)
		return e.testBed(t).Status.Free == 8
	}, 60*time.Second, 100*time.Millisecond)
}

// A pod claimed for its slot by an extender that died before writing the status keeps the
// slot: the next extender reads the claim, not only the status.
func TestExtender_ClaimOutlivesAnUnwrittenReservation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "4")
	checker := watchDoubleBooking(t, e)
	ctx := context.Background()
	require.NoError(t, e.extender.Stop())

	early := slotPod("early", "3")
	require.NoError(t, e.client.Create(ctx, early))
	e.claimSlot(t, early, 3) // what the dead extender wrote before its answer
	require.Equal(t, v1alpha1.SlotFree, e.slots(t)[3].State, "the status never heard of the reservation")

	e.startExtender(t)
	require.NoError(t, e.client.Create(ctx, slotPod("rival", "3,5")))
	rival := e.waitRunning(t, "rival")
	require.Equal(t, "5", slotOf(rival), "slot 3 belongs to the claimed pod")
	got := e.waitRunning(t, "early")
	require.Equal(t, e.slots(t)[3].NodeName, got.Spec.NodeName)
	require.Eventually(t, func() bool {
		s := e.slots(t)[3]
		return s.State != v1alpha1.SlotFree && s.PodName == "early"
	}, 10*time.Second, 100*time.Millisecond, "the seeded reservation reaches the status")
	checker.requireClean(t)
}

// A pod bound beside its own slot's ghost, on the room of a slot whose ghost was evicted for
// a pod that has not bound yet, leaves that pod a full node and no ghost of its own to evict.
// The extender names the displaced ghost instead, and the waiting pod gets in.
func TestExtender_WaitingPodEvictsTheGhostADisplacedPodLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "4")
	checker := watchDoubleBooking(t, e)
	ctx := context.Background()
	var mine, theirs v1alpha1.SlotStatus
	for _, s := range e.slots(t) {
		if s.NodeName == e.slots(t)[0].NodeName {
			mine, theirs = theirs, s
		}
	}
	require.NotEqual(t, mine.Position, theirs.Position, "two slots share a node")
	require.NoError(t, e.extender.Stop())

	// What the scheduler and a dead extender left: one slot's ghost evicted for "waiting",
	// which carries the slot's label but lost its nomination; "squatter" bound to the node
	// with the other slot's label while that slot's ghost still stands.
	var ghosts corev1.PodList
	require.NoError(t, e.client.List(ctx, &ghosts, client.InNamespace("default"), client.MatchingLabels{
		v1alpha1.GhostLabel: "true", v1alpha1.PositionOnNodeLabel: fmt.Sprint(mine.PositionOnNode),
	}, client.MatchingFields{"spec.nodeName": mine.NodeName}))
	require.Len(t, ghosts.Items, 1)
	ghost := ghosts.Items[0]
	require.NoError(t, e.client.Delete(ctx, &ghost, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(e.client.Get(ctx, client.ObjectKeyFromObject(&ghost), &corev1.Pod{}))
	}, 10*time.Second, 50*time.Millisecond)
	squatter := slotPod("squatter", fmt.Sprint(theirs.Position))
	squatter.Spec.NodeName = theirs.NodeName
	require.NoError(t, e.client.Create(ctx, squatter))
	e.claimSlot(t, squatter, theirs.Position)
	e.waitRunning(t, "squatter")
	waiting := slotPod("waiting", fmt.Sprint(mine.Position))
	require.NoError(t, e.client.Create(ctx, waiting))
	e.claimSlot(t, waiting, mine.Position)

	e.startExtender(t)
	got := e.waitRunning(t, "waiting")
	require.Equal(t, mine.NodeName, got.Spec.NodeName)
	require.Eventually(t, func() bool {
		_, stands := ghostsBySlot(t, e)[int(theirs.Position)]
		return !stands
	}, 10*time.Second, 100*time.Millisecond, "the squatter's slot's ghost was the victim")
	checker.requireClean(t)
}
