package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
	"slotplane/slots"
)

// TestBedRef names a test bed.
type TestBedRef struct {
	Namespace string
	Name      string
}

// ReconcileTestBedResult says what one pass did.
type ReconcileTestBedResult struct {
	// Gone: the TestBed does not exist (any more); its workflow may end.
	Gone bool
	// InProgress: slot pods were still being scheduled or terminated, so the nodes and slots
	// they touch were left as they were (Reason names them); run again soon. The rest of the
	// bed was reconciled.
	InProgress bool
	Reason     string
	Created    int
	Deleted    int
	// Skipped are the nodes that are not Ready: their slots were left alone.
	Skipped []string
	// TakenBy names the older test bed (namespace/name) whose nodeLabel this one shares: the
	// nodes are that bed's, and this one has no slots until it is gone.
	TakenBy string
	// HandingOver counts the freed slots whose ghost waits for the next pass (slots.HandOverGrace):
	// their job's pods left since the last pass, and Admission may be handing them to the
	// next job.
	HandingOver int
	// Settled: every free slot holds its ghost and nothing was changed.
	Settled bool
	// RecheckIn, when positive, is when the next pass is due whatever happens: a granted
	// slot's grantedSlotTimeout ends then.
	RecheckIn time.Duration
}

// ReconcileTestBed makes one pass over a test bed: it lays the slots out over the labelled
// nodes, creates the ghost pods that are missing, deletes the ones no slot wants, and writes
// the slots and their occupation to the bed's slot slices and the counts to its status.
func (a *Activities) ReconcileTestBed(ctx context.Context, in TestBedRef) (ReconcileTestBedResult, error) {
	var tb v1alpha1.TestBed
	if err := a.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.Name}, &tb); err != nil {
		if apierrors.IsNotFound(err) {
			// Where no garbage collector follows the owner references (the local
			// platform), the bed's slices would outlive it.
			err := a.Client.DeleteAllOf(ctx, &v1alpha1.SlotSlice{}, client.InNamespace(in.Namespace), client.MatchingLabels{v1alpha1.TestBedLabel: in.Name})
			if err != nil && !apierrors.IsNotFound(err) {
				return ReconcileTestBedResult{}, fmt.Errorf("delete the slot slices of testbed %s/%s: %w", in.Namespace, in.Name, err)
			}
			return ReconcileTestBedResult{Gone: true}, nil
		}
		return ReconcileTestBedResult{}, fmt.Errorf("get testbed %s/%s: %w", in.Namespace, in.Name, err)
	}
	owner, err := a.nodeLabelOwner(ctx, &tb)
	if err != nil {
		return ReconcileTestBedResult{}, err
	}
	have, err := slotslices.List(ctx, a.Client, &tb)
	if err != nil {
		return ReconcileTestBedResult{}, err
	}
	current := slotslices.Slots(have)
	var layout []slots.Slot
	var nodes []corev1.Node
	var g grants
	fromCopy := false
	if owner == "" {
		if nodes, err = a.bedNodes(ctx, &tb); err != nil {
			return ReconcileTestBedResult{}, err
		}
		if layout, g, fromCopy, err = a.layoutWithGrants(ctx, &tb, current, nodes, true); err != nil {
			return ReconcileTestBedResult{}, err
		}
	}
	pods, observed, err := a.slotPods(ctx, &tb)
	if err != nil {
		return ReconcileTestBedResult{}, err
	}
	requests := GhostRequests(tb.Spec.ResourcesPerSlot)
	plan := slots.PlanGhosts(layout, requests, observed)
	handingOver, handOverDue := slots.HoldBackFreed(&plan, current, g.freed)
	readLate := false
	if fromCopy {
		// The worker's copy of the jobs may lag: a grant not in it yet would get a ghost or
		// lose its slot's place, a run whose end it lacks would lose its slot's new ghost or
		// keep a freed slot without one (a slot held with no pod of its job in it: a run
		// that ended, or a grant whose pods are on their way). A pass that changes anything,
		// or would leave such a slot be, decides on the API server's word.
		confirm := len(plan.Create) > 0 || len(plan.Delete) > 0 || slots.Moved(layout, current)
		if empty := slots.HeldEmpty(layout, observed); !confirm && len(empty) > 0 {
			// In a busy bed nearly every pass finds a slot held empty (a grant's pods on their
			// way), and listing every job of the namespace from etcd for it would be 16% of the
			// worker's CPU in the 1,000-job run. The API server's word on such slots is their
			// holders' word: when each slot's holder, read from etcd, still claims it, the
			// copy was right about them. Only when one does not is the whole list read.
			held, freed, freedDue, err := a.stillClaimed(ctx, &tb, empty, g.holders)
			if err != nil {
				return ReconcileTestBedResult{}, err
			}
			confirm = !held
			if held {
				handingOver, handOverDue = handingOver+freed, slots.Sooner(handOverDue, freedDue)
			}
		}
		if confirm {
			if layout, g, _, err = a.layoutWithGrants(ctx, &tb, current, nodes, false); err != nil {
				return ReconcileTestBedResult{}, err
			}
			plan = slots.PlanGhosts(layout, requests, observed)
			handingOver, handOverDue = slots.HoldBackFreed(&plan, current, g.freed)
			readLate = true
		}
	}
	recheck := slots.Sooner(g.recheck, handOverDue)

	// What the plan holds back is left out of Delete and Create, so the rest of the bed is
	// reconciled even while a pod somewhere is stuck.
	res := ReconcileTestBedResult{InProgress: plan.InProgress, Reason: plan.Reason, Skipped: plan.SkippedNodes, TakenBy: owner, RecheckIn: recheck, HandingOver: handingOver}
	budget := time.Now().Add(passWriteBudget)
	res.Deleted, err = writeEach(ctx, plan.Delete, budget, func(ctx context.Context, ghost slots.ObservedPod) error {
		pod := pods[ghost.UID]
		err := a.Client.Delete(ctx, &pod, client.Preconditions{UID: &ghost.UID}, client.GracePeriodSeconds(0))
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete ghost %s: %w", ghost.Name, err)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if len(plan.Create) > 0 && owner == "" && !(readLate && res.Deleted == 0) {
		// A grant written since the pass read the jobs has cleared its slots' ghosts
		// already (RequestCreation); a ghost made now would stand in the job's way. Read the
		// grants again: the window left is this read to the create, not the whole pass. A
		// plan made on a read after the pods' (readLate) with no delete since has that
		// window already.
		now, err := a.assignedSlots(ctx, &tb, a.now())
		if err != nil {
			return res, err
		}
		plan.Create = slices.DeleteFunc(plan.Create, func(s slots.Slot) bool {
			return now.assigned[s.Position] && !now.unclaimed[s.Position]
		})
	}
	res.Created, err = writeEach(ctx, plan.Create, budget, func(ctx context.Context, s slots.Slot) error {
		err := a.Client.Create(ctx, a.ghostPod(&tb, s, requests))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ghost for slot %d: %w", s.Position, err)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if err := a.forgetGrants(ctx, tb.Name, g.done, budget); err != nil {
		return res, err
	}
	res.Settled = !res.InProgress && res.Created == 0 && res.Deleted == 0 && res.HandingOver == 0
	if err := a.writeStatus(ctx, &tb, have, layout, observed, &res); err != nil {
		return res, err
	}
	return res, nil
}

// A pass sends passWritesAtOnce writes (ghost creates or deletes, grant labels taken off) at
// a time, and starts none after passWriteBudget: a new bed of 8,000 slots, made one ghost at
// a time, ran its first pass past the activity's one-minute timeout. What a pass leaves is
// planned again by the next one, which comes back soon since the pass wrote something
// (Settled is false).
const (
	passWritesAtOnce = 8
	passWriteBudget  = 20 * time.Second
)

// writeEach calls write for each of items, passWritesAtOnce at a time, starting none after
// until. It returns how many it wrote, and the first error (the rest then stop).
func writeEach[T any](ctx context.Context, items []T, until time.Time, write func(context.Context, T) error) (int, error) {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(passWritesAtOnce)
	var written atomic.Int64
	for _, it := range items {
		if ctx.Err() != nil || time.Now().After(until) {
			break
		}
		g.Go(func() error {
			if err := write(ctx, it); err != nil {
				return err
			}
			written.Add(1)
			return nil
		})
	}
	err := g.Wait()
	return int(written.Load()), err
}

// forgetGrants takes the bed's GrantedTestBedLabel off jobs whose runs hold nothing of it
// any more, so the bed's reads of its grants skip them. Each write carries the
// resourceVersion read: a job asked for again since (a new request, written with the label)
// conflicts and keeps it, and the next pass decides on it anew. A job gone needs nothing.
func (a *Activities) forgetGrants(ctx context.Context, bed string, jobs []*v1alpha1.BatchJob, until time.Time) error {
	_, err := writeEach(ctx, jobs, until, func(ctx context.Context, j *v1alpha1.BatchJob) error {
		job := j.DeepCopy() // j is the reader's: the patch only reads it
		delete(job.Labels, v1alpha1.GrantedTestBedLabel)
		err := a.Client.Patch(ctx, job, client.MergeFromWithOptions(j, client.MergeFromWithOptimisticLock{}))
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("take the grant of testbed %s off batch job %s: %w", bed, j.Name, err)
		}
		return nil
	})
	return err
}

// layoutWithGrants lays out the bed's slots over nodes (layout) and marks those that jobs
// hold (assignedSlots). The jobs come from the worker's copy when mayCopy and the copy has synced
// (fromCopy), else from the API server; either way only the jobs labelled with the bed. The
// grants' recheck is set to when the next grant times out or leaving slot's grace ends.
//
// Most passes change nothing (a job's pod came or went, the slots' states are written), and
// reading a thousand jobs from etcd twice a pass was a twelfth of the API server's work in the
// long run; the copy costs it nothing.
func (a *Activities) layoutWithGrants(ctx context.Context, tb *v1alpha1.TestBed, current []v1alpha1.SlotStatus, nodes []corev1.Node, mayCopy bool) (layout []slots.Slot, g grants, fromCopy bool, err error) {
	now := a.now()
	if r := a.Changes.reader(v1alpha1.GroupVersion.WithKind("BatchJob")); mayCopy && r != nil {
		fromCopy = true
		g, err = a.assignedSlotsIn(ctx, r, tb, now)
	} else {
		g, err = a.assignedSlots(ctx, tb, now)
	}
	if err != nil {
		return nil, grants{}, false, err
	}
	layout, leaving := a.layout(tb, current, nodes, g.assigned, now)
	for i := range layout {
		p := layout[i].Position
		layout[i].Assigned = g.assigned[p] && !g.unclaimed[p]
	}
	g.recheck = slots.Sooner(g.recheck, leaving)
	return layout, g, fromCopy, nil
}

// stillClaimed says whether every slot of positions is still claimed, on etcd's word, by one
// of the jobs holders credits with it: one read of each of those jobs.
//
// A slot whose holder's run, on etcd's word, ended less than slots.HandOverGrace ago counts as
// claimed too (freed counts them; freedDue is when the first such grace ends). The copy has
// not seen that end yet, and a pass that read every job would leave the slot as this one
// does: without a ghost while its next job may be on its way (a freed slot's hand-over).
// In the 1,000-job run, a copy a few milliseconds behind a job's end made 6 to 8 lists of
// every job per hundred jobs, each taking the API server 0.2 to 0.6 s. The pass comes back
// at freedDue, when the copy has the end.
func (a *Activities) stillClaimed(ctx context.Context, tb *v1alpha1.TestBed, positions []int32, holders map[int32][]string) (held bool, freed int, freedDue time.Duration, err error) {
	timeout := tb.Spec.GrantedSlotTimeoutOrDefault()
	now := a.now()
	type claim struct {
		slots []int32 // the slots the job claims now; nil when none
		freed []int32 // the slots its run left less than slots.HandOverGrace ago
		left  time.Duration
	}
	claims := map[string]claim{}
	for _, p := range positions {
		claimed := false
		for _, name := range holders[p] {
			c, read := claims[name]
			if !read {
				var j v1alpha1.BatchJob
				err := a.Client.Get(ctx, types.NamespacedName{Namespace: tb.Namespace, Name: name}, &j)
				if client.IgnoreNotFound(err) != nil {
					return false, 0, 0, fmt.Errorf("get batch job %s/%s: %w", tb.Namespace, name, err)
				}
				if err == nil {
					if h := slots.HoldOf(&j, tb.Name, timeout, now); h.Holds && !h.Unclaimed {
						c.slots = h.Slots
					} else {
						c.freed, c.left = slots.FreedRecently(&j, tb.Name, now)
					}
				}
				claims[name] = c
			}
			if slices.Contains(c.slots, p) {
				claimed = true
				break
			}
			if c.left > 0 && slices.Contains(c.freed, p) {
				claimed = true
				freed++
				freedDue = slots.Sooner(freedDue, c.left)
				break
			}
		}
		if !claimed {
			return false, 0, 0, nil
		}
	}
	return true, freed, freedDue, nil
}

// LeavingGrace is how long a slot whose node left the test bed stays, unavailable, when no
// job holds it. Admission may have granted it on a read from just before the node left, and
// the grant's creation request, once written, holds it; the request is written only if the
// slot is there and not leaving (RequestCreation). A pass that drops the slot comes at least
// this long after the slot was marked leaving, so a request checked before the mark was
// written long before the pass lists the jobs, and keeps the slot.
const LeavingGrace = 10 * time.Second

// bedNodes lists the nodes that carry the bed's node label.
func (a *Activities) bedNodes(ctx context.Context, tb *v1alpha1.TestBed) ([]corev1.Node, error) {
	var nodes corev1.NodeList
	if err := a.Client.List(ctx, &nodes, client.HasLabels{tb.Spec.NodeLabel}); err != nil {
		return nil, fmt.Errorf("list nodes labelled %s: %w", tb.Spec.NodeLabel, err)
	}
	return nodes.Items, nil
}

// layout lays the bed's slots over its nodes (bedNodes): where they are while jobs hold any
// of them (current, the slots as the bed's slices have them, with the positions assigned to running jobs) or a slot's node
// left less than LeavingGrace ago, afresh otherwise (slots.Relayout). recheck, when positive,
// is when the next leaving slot's grace ends.
func (a *Activities) layout(tb *v1alpha1.TestBed, current []v1alpha1.SlotStatus, nodes []corev1.Node, assigned map[int32]bool, now time.Time) (out []slots.Slot, recheck time.Duration) {
	in := make([]slots.Node, 0, len(nodes))
	inBed := map[string]bool{}
	for _, n := range nodes {
		if n.DeletionTimestamp != nil {
			continue
		}
		node := slots.Node{Name: n.Name, ID: n.Labels[tb.Spec.NodeLabel], Unready: !nodeReady(&n), Taint: untoleratedTaint(&n)}
		if len(n.Status.Allocatable) > 0 { // a node that has not told its resources yet is not judged
			fits, lacks := slots.Fit(n.Status.Allocatable, tb.Spec.ResourcesPerSlot, tb.Spec.SlotsPerNode)
			node.Fits, node.Lacks = &fits, lacks
		}
		in = append(in, node)
		inBed[n.Name] = true
	}
	// graceLeft is how long a slot whose node left keeps its grace (0: none, or over).
	graceLeft := func(s v1alpha1.SlotStatus) time.Duration {
		if inBed[s.NodeName] && s.PositionOnNode < tb.Spec.SlotsPerNode {
			return 0 // not leaving
		}
		if s.LeavingSince == nil {
			return a.leavingGrace() // leaving from this pass on
		}
		return max(0, s.LeavingSince.Add(a.leavingGrace()).Sub(now))
	}
	held := func(s v1alpha1.SlotStatus) bool {
		return assigned[s.Position] || s.State == v1alpha1.SlotReserved || s.State == v1alpha1.SlotOccupied || graceLeft(s) > 0
	}
	out = slots.Relayout(current, in, tb.Spec.SlotsPerNode, held)
	for _, s := range current {
		recheck = slots.Sooner(recheck, graceLeft(s))
	}
	for i := range out {
		if out[i].Leaving && out[i].LeavingSince.IsZero() {
			out[i].LeavingSince = now // leaving from this pass on
		}
	}
	return out, recheck
}

// grants are the bed's slots that jobs hold while they run (assigned): the slots of each
// BatchJob's creation request for this bed (or, once preemption took some back, of its
// assigned-slots annotation) until its status says that run ended. A ghost made for such a
// slot while the job's pod is away (Spark asks for a lost executor again) would be bound
// straight to the node, into the room the pod is coming back to.
//
// A grant clears its slots' ghosts at once (RequestCreation). If the job's pods have not all
// come within the bed's grantedSlotTimeout, its slots are unclaimed: they keep their places
// in the layout, but a free one gets its ghost back. recheck is when the next grant times out.
type grants struct {
	assigned, unclaimed map[int32]bool
	recheck             time.Duration
	// holders names the jobs that claim each claimed slot.
	holders map[int32][]string
	// freed are the slots of runs that ended less than slots.HandOverGrace ago, with the grace
	// left.
	freed map[int32]time.Duration
	// done are the jobs labelled with the bed (GrantedTestBedLabel) that hold nothing of it
	// any more, and whose hand-over grace is over: the pass takes the label off
	// (forgetGrants). They are shared with the reader's copy: read only.
	done []*v1alpha1.BatchJob
}

func (a *Activities) assignedSlots(ctx context.Context, tb *v1alpha1.TestBed, now time.Time) (grants, error) {
	return a.assignedSlotsIn(ctx, a.Client, tb, now)
}

// assignedSlotsIn is assignedSlots with the jobs read from r: those labelled with the bed
// (GrantedTestBedLabel), which RequestCreation writes with each request.
func (a *Activities) assignedSlotsIn(ctx context.Context, r client.Reader, tb *v1alpha1.TestBed, now time.Time) (grants, error) {
	var jobs v1alpha1.BatchJobList
	err := r.List(ctx, &jobs, client.InNamespace(tb.Namespace), client.MatchingLabels{v1alpha1.GrantedTestBedLabel: tb.Name}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return grants{}, fmt.Errorf("list the batch jobs granted slots of testbed %s/%s: %w", tb.Namespace, tb.Name, err)
	}
	timeout := tb.Spec.GrantedSlotTimeoutOrDefault()
	out := grants{assigned: map[int32]bool{}, unclaimed: map[int32]bool{}, holders: map[int32][]string{}, freed: map[int32]time.Duration{}}
	claimed := map[int32]bool{}
	for i := range jobs.Items {
		h := slots.HoldOf(&jobs.Items[i], tb.Name, timeout, now)
		if !h.Holds {
			if ps, left := slots.FreedRecently(&jobs.Items[i], tb.Name, now); left > 0 {
				for _, p := range ps {
					out.freed[p] = max(out.freed[p], left)
				}
			} else {
				out.done = append(out.done, &jobs.Items[i])
			}
			continue
		}
		out.recheck = slots.Sooner(out.recheck, h.DueIn)
		for _, p := range h.Slots {
			out.assigned[p] = true
			if h.Unclaimed {
				out.unclaimed[p] = true
			} else {
				claimed[p] = true
				out.holders[p] = append(out.holders[p], jobs.Items[i].Name)
			}
		}
	}
	// A slot handed from a run being cancelled to a new one is claimed while either is.
	for p := range claimed {
		delete(out.unclaimed, p)
	}
	return out, nil
}

// nodeLabelOwner names the test bed, of any namespace, that owns the nodes tb's nodeLabel
// marks, when that is not tb: two beds on one label would put two ghosts, and two jobs, in
// every slot. The oldest bed owns them (creation time, then namespace and name).
func (a *Activities) nodeLabelOwner(ctx context.Context, tb *v1alpha1.TestBed) (string, error) {
	var beds v1alpha1.TestBedList
	if err := a.Client.List(ctx, &beds); err != nil {
		return "", fmt.Errorf("list test beds: %w", err)
	}
	key := func(b *v1alpha1.TestBed) string { return b.Namespace + "/" + b.Name }
	var owner *v1alpha1.TestBed
	for i := range beds.Items {
		b := &beds.Items[i]
		if b.Spec.NodeLabel != tb.Spec.NodeLabel || b.DeletionTimestamp != nil {
			continue
		}
		if owner == nil || b.CreationTimestamp.Before(&owner.CreationTimestamp) ||
			(b.CreationTimestamp.Equal(&owner.CreationTimestamp) && key(b) < key(owner)) {
			owner = b
		}
	}
	if owner == nil || key(owner) == key(tb) {
		return "", nil
	}
	return key(owner), nil
}

// nodeReady says whether a node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// untoleratedTaint is the key of a taint on n that keeps ghosts off it (NoSchedule or
// NoExecute, other than the test bed taint they tolerate), or "".
func untoleratedTaint(n *corev1.Node) string {
	for _, t := range n.Spec.Taints {
		if t.Key != v1alpha1.TestBedTaint && (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) {
			return t.Key
		}
	}
	return ""
}

// slotPods lists the pods of the test bed, keyed by uid, and their model.
func (a *Activities) slotPods(ctx context.Context, tb *v1alpha1.TestBed) (map[types.UID]corev1.Pod, []slots.ObservedPod, error) {
	var list corev1.PodList
	if err := a.Client.List(ctx, &list, client.InNamespace(tb.Namespace), client.MatchingLabels{v1alpha1.TestBedLabel: tb.Name}); err != nil {
		return nil, nil, fmt.Errorf("list pods of testbed %s: %w", tb.Name, err)
	}
	byUID := make(map[types.UID]corev1.Pod, len(list.Items))
	observed := make([]slots.ObservedPod, 0, len(list.Items))
	now := a.now()
	for _, p := range list.Items {
		byUID[p.UID] = p
		o := ObservePod(&p)
		if p.DeletionTimestamp != nil {
			o.Overdue = now.Sub(p.DeletionTimestamp.Time)
		}
		observed = append(observed, o)
	}
	return byUID, observed, nil
}

// ObservePod is the slot model's view of a pod of a test bed.
func ObservePod(p *corev1.Pod) slots.ObservedPod {
	o := slots.ObservedPod{
		Name:        p.Name,
		UID:         p.UID,
		NodeName:    p.Spec.NodeName,
		Ghost:       p.Labels[v1alpha1.GhostLabel] == "true",
		Slot:        -1,
		Terminating: p.DeletionTimestamp != nil,
		Finished:    p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed,
	}
	// A slot claim the extender did not write is ignored: the pod holds no slot, and the
	// slot it names keeps its ghost.
	if pos, ok := slots.ProvenSlot(p); ok {
		o.Slot = pos
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			o.Unschedulable = true
		}
	}
	if v, err := strconv.ParseInt(p.Labels[v1alpha1.PositionOnNodeLabel], 10, 32); err == nil {
		o.PositionOnNode = int32(v)
	}
	if len(p.Spec.Containers) > 0 {
		o.Requests = p.Spec.Containers[0].Resources.Requests
	}
	return o
}

// ClearGhosts deletes the ghost pods of the given slots of a test bed (grace 0, each
// conditional on its UID), the slots side by side: a job's pods wait for all of them. A slot
// the bed does not have, or one without a ghost, is skipped: the call can be repeated. The
// caller must have recorded first why the slots want no ghost (a creation request), or the
// reconciler makes them new ones.
func (a *Activities) ClearGhosts(ctx context.Context, bed TestBedRef, positions []int32) error {
	if len(positions) == 0 {
		return nil
	}
	// Only the slots' nodes are read, from the worker's copy, and the ghosts from the API
	// server's watch cache: a slot that a copy lagging behind the bed's layout lacks, or
	// whose ghost the watch cache has not seen yet, keeps its ghost, and its job's pod takes
	// the preemption path instead.
	b, err := readBedFrom(ctx, a.readCopy, types.NamespacedName{Namespace: bed.Namespace, Name: bed.Name}, positions)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get testbed %s/%s: %w", bed.Namespace, bed.Name, err)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(clearGhostsAtOnce)
	for _, p := range positions {
		s, ok := b.slots[p]
		if !ok || s.NodeName == "" {
			continue
		}
		g.Go(func() error { return a.clearGhostOf(ctx, &b.tb, s) })
	}
	return g.Wait()
}

// clearGhostsAtOnce bounds the slots whose ghosts one ClearGhosts deletes at the same time.
const clearGhostsAtOnce = 8

func (a *Activities) clearGhostOf(ctx context.Context, tb *v1alpha1.TestBed, s v1alpha1.SlotStatus) error {
	var ghosts corev1.PodList
	err := a.Client.List(ctx, &ghosts, client.InNamespace(tb.Namespace), client.MatchingFields{"spec.nodeName": s.NodeName},
		client.MatchingLabels{v1alpha1.TestBedLabel: tb.Name, v1alpha1.GhostLabel: "true", v1alpha1.PositionOnNodeLabel: strconv.Itoa(int(s.PositionOnNode))},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		return fmt.Errorf("list the ghost of slot %d: %w", s.Position, err)
	}
	for i := range ghosts.Items {
		g := &ghosts.Items[i]
		if g.DeletionTimestamp != nil {
			continue
		}
		err := a.Client.Delete(ctx, g, client.Preconditions{UID: &g.UID}, client.GracePeriodSeconds(0))
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete ghost %s of slot %d: %w", g.Name, s.Position, err)
		}
	}
	return nil
}

// GhostRequests is what a ghost requests: the slot's resources and one slot.
func GhostRequests(perSlot corev1.ResourceList) corev1.ResourceList {
	r := perSlot.DeepCopy()
	if r == nil {
		r = corev1.ResourceList{}
	}
	r[corev1.ResourceName(v1alpha1.SlotResource)] = resource.MustParse("1")
	return r
}

// ghostPod is the ghost of a slot. It is bound to the slot's node directly (spec.nodeName),
// so no scheduler is involved in placing it. Its name is derived from the test bed, the
// node, the position on the node and the requests, so creating it twice is harmless and a
// resized ghost never collides with the one it replaces.
func (a *Activities) ghostPod(tb *v1alpha1.TestBed, s slots.Slot, requests corev1.ResourceList) *corev1.Pod {
	image := a.GhostImage
	if image == "" {
		image = DefaultGhostImage
	}
	sum := sha256.Sum256([]byte(tb.Name + "/" + s.NodeName + "/" + strconv.Itoa(int(s.PositionOnNode)) + "/" + slots.RequestsKey(requests)))
	name := fmt.Sprintf("%s-ghost-%s-%d", tb.Name, s.NodeName, s.PositionOnNode)
	if len(name) > 240 {
		name = name[:240]
	}
	name += "-" + hex.EncodeToString(sum[:])[:8]
	zero, nobody, no, yes := int64(0), int64(65535), false, true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: tb.Namespace,
			Labels: map[string]string{
				v1alpha1.TestBedLabel:        tb.Name,
				v1alpha1.GhostLabel:          "true",
				v1alpha1.PositionOnNodeLabel: strconv.Itoa(int(s.PositionOnNode)),
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                      s.NodeName,
			PriorityClassName:             v1alpha1.GhostPriorityClass,
			TerminationGracePeriodSeconds: &zero,
			Tolerations:                   []corev1.Toleration{{Key: v1alpha1.TestBedTaint, Operator: corev1.TolerationOpExists}},
			// A ghost needs nothing: no token, no root, no capability. It passes the
			// restricted Pod Security Standard, so test beds may live in namespaces that
			// enforce it.
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &nobody, RunAsGroup: &nobody,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name:      "ghost",
				Image:     image,
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	// The owner reference lets a real cluster's garbage collector remove the ghosts of a
	// deleted TestBed. It cannot fail for a TestBed read from the API server.
	_ = controllerutil.SetControllerReference(tb, pod, a.Client.Scheme())
	return pod
}

// writeStatus writes the layout and occupation to the bed's slot slices (only the slices
// that change), then the counts and the Ready condition to the TestBed status. observed
// must be listed after the slices were read (have): a slot a slice reserves for a pod
// created after the pods were listed would look like one whose pod is gone, and be
// released while the pod is being placed into it. The extender writes reservations into
// the same slices, so each slice's write is optimistic, and a slice it changed meanwhile is
// left for the next pass, which reads it again before it lists the pods: the pass is then
// not settled (res.Settled), and the next comes soon. Nothing is read again here: while a
// large bed fills, the extender writes its slices faster than a pass can read them all and
// list every pod of the bed again.
func (a *Activities) writeStatus(ctx context.Context, tb *v1alpha1.TestBed, have []v1alpha1.SlotSlice, layout []slots.Slot, observed []slots.ObservedPod, res *ReconcileTestBedResult) error {
	key := client.ObjectKeyFromObject(tb)
	running := func(p slots.ObservedPod) bool { return p.NodeName != "" && !p.Terminating && !p.Finished }
	want := slots.Statuses(layout, slotslices.Slots(have))
	slots.SyncOccupation(want, observed, running)
	w, err := slotslices.Write(ctx, a.Client, tb, have, want)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("write status of testbed %s: %w", key, err)
	}
	if w.Conflicts > 0 {
		res.Settled = false
	}
	first := true
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			// Another writer's condition (the bridge's QueuesConfigured): read it, keep it.
			if err := a.Client.Get(ctx, key, tb); err != nil {
				return err
			}
		}
		first = false
		// From the status read: the conditions of other writers (the bridge's
		// QueuesConfigured) stay as they are; this pass owns Ready only.
		st := tb.Status.DeepCopy()
		st.Free, st.Reserved, st.Occupied = slots.Count(want)
		st.Total = int32(len(want))
		st.Nodes = countNodes(layout)
		st.ObservedGeneration = tb.Generation
		cond := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: tb.Generation}
		switch {
		case res.InProgress:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "InProgress", res.Reason
		case !res.Settled:
			cond.Status, cond.Reason = metav1.ConditionFalse, "Reconciling"
			cond.Message = fmt.Sprintf("created %d and deleted %d ghost pods", res.Created, res.Deleted)
			if res.HandingOver > 0 {
				cond.Message += fmt.Sprintf("; %d freed slots wait a moment for their next job before they get their ghosts", res.HandingOver)
			}
			if w.Conflicts > 0 {
				cond.Message += fmt.Sprintf("; %d slot slices changed while the pass wrote them, and are written at the next", w.Conflicts)
			}
		default:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "GhostsInPlace", "every free slot holds its ghost pod"
		}
		if res.TakenBy != "" {
			cond.Status, cond.Reason = metav1.ConditionFalse, "NodeLabelTaken"
			cond.Message = fmt.Sprintf("the nodes labelled %s belong to test bed %s, made earlier: this one has no slots while it exists (give this one a label of its own)", tb.Spec.NodeLabel, res.TakenBy)
		}
		if n := len(res.Skipped); n > 0 {
			shown := res.Skipped[:min(n, 5)]
			cond.Message += fmt.Sprintf("; %d nodes are not Ready and their slots are left alone (%s)", n, strings.Join(shown, ", "))
		}
		meta.SetStatusCondition(&st.Conditions, cond)
		meta.SetStatusCondition(&st.Conditions, slotsFit(tb, layout))
		if equality.Semantic.DeepEqual(&tb.Status, st) {
			return nil
		}
		tb.Status = *st
		return a.Client.Status().Update(ctx, tb)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write status of testbed %s: %w", key, err)
	}
	return nil
}

// slotsFit is the bed's SlotsFit condition: whether every node's allocatable resources hold
// its slots, and, when not, which nodes lack what (the first five).
func slotsFit(tb *v1alpha1.TestBed, layout []slots.Slot) metav1.Condition {
	cond := metav1.Condition{Type: v1alpha1.ConditionSlotsFit, ObservedGeneration: tb.Generation,
		Status: metav1.ConditionTrue, Reason: "RoomOnEveryNode", Message: "every node's allocatable resources hold its slots"}
	if short := slots.WithoutRoom(layout); len(short) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, "NoRoom"
		cond.Message = fmt.Sprintf("%d nodes lack room for some of their slots, which get no ghost and go to no job: %s", len(short), strings.Join(short[:min(len(short), 5)], "; "))
	}
	return cond
}

func countNodes(layout []slots.Slot) int32 {
	seen := map[string]bool{}
	for _, s := range layout {
		seen[s.NodeName] = true
	}
	return int32(len(seen))
}
