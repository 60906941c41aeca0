package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/slots"
)

func claimedPod(name string, uid types.UID, labels map[string]string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, Labels: labels, Annotations: annotations}}
}

// ClaimSlot writes the pod's own claim, also over a claim the pod came with.
func TestClaimSlot_WritesThePodsOwnClaim(t *testing.T) {
	cases := map[string]*corev1.Pod{
		"a pod without a claim": claimedPod("exec", "u1", nil, nil),
		"a pod created with the claim of another pod": claimedPod("exec", "u1",
			nil, map[string]string{v1alpha1.SlotClaimAnnotation: "5/u0"}),
		"a pod claimed for another slot": claimedPod("exec", "u1",
			nil, map[string]string{v1alpha1.SlotClaimAnnotation: "4/u1"}),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(pod.DeepCopy()).Build()
			r := &Reserver{Client: cl}
			require.NoError(t, r.ClaimSlot(context.Background(), pod, 5))
			var got corev1.Pod
			require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(pod), &got))
			slot, ok := slots.ProvenSlot(&got)
			require.True(t, ok, "annotations %v", got.Annotations)
			require.EqualValues(t, 5, slot)
		})
	}
}

// After a restart, the extender takes back the reservations its claims record, and only
// those: a pod that came with a claim of its own making holds nothing.
func TestReserve_SeedsOnlyProvenClaims(t *testing.T) {
	bedLabels := map[string]string{v1alpha1.TestBedLabel: "bed"}
	forged := claimedPod("forged", "u-forged", bedLabels, map[string]string{v1alpha1.SlotClaimAnnotation: "1/u-someone"})
	proven := claimedPod("proven", "u-proven", bedLabels, map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(3, "u-proven")})
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithStatusSubresource(&v1alpha1.TestBed{}).WithObjects(withSlots(testobjects.TestBed("bed").UID("bed-uid").Obj(), testSlots())...).WithObjects(forged, proven).Build()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := NewReserver(ctx, cl, cl, slog.New(slog.DiscardHandler))
	key := types.NamespacedName{Namespace: "default", Name: "bed"}

	// Slot 3 is the proven pod's; slot 1 is free whatever the forged claim says.
	got, err := r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{1, 3}, Pod: slots.Pod{Name: "newcomer", UID: "u-new"}}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, got.Slot.Position)
	require.False(t, got.Held)

	got, err = r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{3}, Pod: slots.Pod{Name: "proven", UID: "u-proven"}}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 3, got.Slot.Position)
	require.True(t, got.Held, "the proven pod's reservation was not taken back")
}

// A pod gets only slots granted to its BatchJob's run in its own bed, read from the job's
// metadata alone (the cache keeps nothing else of BatchJobs): the creation request's slots,
// or what preemption left of them, narrowed by the pod's own ids.
func TestGranted_GivesOnlyTheSlotsGrantedToThePodsJob(t *testing.T) {
	granted := metav1.NewMicroTime(time.Now())
	request := func(bed string, ids ...int32) string {
		raw, err := json.Marshal(v1alpha1.CreationRequest{Scheduling: "s", TestBed: bed, Slots: ids, Run: 1, GrantedAt: &granted})
		require.NoError(t, err)
		return string(raw)
	}
	job := func(name, bed string, annotations map[string]string) *v1alpha1.BatchJob {
		j := &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations}}
		if bed != "" {
			j.Labels = map[string]string{v1alpha1.GrantedTestBedLabel: bed}
		}
		return j
	}
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(
		job("granted", "bed", map[string]string{v1alpha1.CreationRequestAnnotation: request("bed", 1, 3, 5, 7)}),
		job("granted-some", "bed", map[string]string{v1alpha1.CreationRequestAnnotation: request("bed", 3, 4)}),
		job("preempted", "bed", map[string]string{v1alpha1.CreationRequestAnnotation: request("bed", 1, 3, 5, 7), v1alpha1.AssignedSlotsAnnotation: "7,5"}),
		job("lost-all", "bed", map[string]string{v1alpha1.CreationRequestAnnotation: request("bed", 1, 3, 5, 7), v1alpha1.AssignedSlotsAnnotation: " "}),
		job("other-bed", "other", map[string]string{v1alpha1.CreationRequestAnnotation: request("other", 1, 3, 5, 7)}),
		job("label-only", "bed", nil),
		job("no-grant", "", map[string]string{"other": "x"}),
		job("ungranted-request", "bed", map[string]string{v1alpha1.CreationRequestAnnotation: `{"scheduling":"s","testBed":"bed","slots":[1,3],"run":1}`}),
		job("other-grants", "", map[string]string{v1alpha1.CreationRequestAnnotation: request("bed", 0, 2)}),
	).Build()
	r := &Reserver{Cache: cl}
	own := SlotRequest{TestBed: types.NamespacedName{Namespace: "default", Name: "bed"}, Allowed: []int32{7, 1, 3, 5}}
	cases := map[string]struct {
		job             string
		want            []int32
		noSlot, noGrant string
	}{
		"a job granted the pod's slots": {job: "granted", want: []int32{7, 1, 3, 5}},
		"a job granted some of them":    {job: "granted-some", want: []int32{3}},
		"a job preempted in part":       {job: "preempted", want: []int32{7, 5}},
		"a job preempted entirely":      {job: "lost-all", noSlot: "holds no slot now"},
		"no batch job label":            {job: "", noGrant: "names no batch job"},
		"a job that is not there":       {job: "gone", noGrant: "does not exist"},
		"a grant in another bed":        {job: "other-bed", noGrant: "holds no grant in test bed bed"},
		"a granted label alone":         {job: "label-only", noGrant: "holds no grant in test bed bed"},
		"no grant at all":               {job: "no-grant", noGrant: "holds no grant"},
		"a request with no grant time":  {job: "ungranted-request", noGrant: "no grantedAt"},
		"a request without the label":   {job: "other-grants", noGrant: "holds no grant in test bed bed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := claimedPod("exec", "u1", map[string]string{v1alpha1.BatchJobLabel: tc.job}, nil)
			got, err := r.Granted(context.Background(), pod, own)
			if tc.noGrant != "" {
				require.ErrorIs(t, err, ErrNoGrant)
				require.ErrorContains(t, err, tc.noGrant)
				return
			}
			if tc.noSlot != "" {
				e, ok := errors.AsType[*slots.NoSlotError](err)
				require.True(t, ok, "want no slot, got %v", err)
				require.Contains(t, e.Reason, tc.noSlot)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Allowed)
		})
	}
	pod := claimedPod("exec", "u1", map[string]string{v1alpha1.BatchJobLabel: "granted-some"}, nil)
	_, err := r.Granted(context.Background(), pod, SlotRequest{TestBed: own.TestBed, Allowed: []int32{0, 1}})
	require.ErrorContains(t, err, "none of the pod's slots [0,1] is among the slots [3,4] granted to its batch job granted-some")
}

// holderBed is the 2x2 test bed, and its slice, with slot 1 occupied by the pod "holder".
func holderBed() []client.Object {
	s := testSlots()
	s[1].State, s[1].PodName, s[1].PodUID = v1alpha1.SlotOccupied, "holder", "u-holder"
	return withSlots(testobjects.TestBed("bed").UID("bed-uid").Obj(), s)
}

func holderPod(uid types.UID, phase corev1.PodPhase) *corev1.Pod {
	p := claimedPod("holder", uid, map[string]string{v1alpha1.TestBedLabel: "bed"}, nil)
	p.Spec.NodeName = "node-01"
	p.Status.Phase = phase
	return p
}

// statusOf is slot 1 of the test bed as the API server has it.
func statusOf(t *testing.T, cl client.Client) v1alpha1.SlotStatus {
	t.Helper()
	got, err := slotslices.Read(context.Background(), cl, testobjects.TestBed("bed").UID("bed-uid").Obj())
	require.NoError(t, err)
	return got[1]
}

// A slot whose holder finished, or whose holder's deletion the informer reported, is free to
// the extender at once, before the reconciler writes the status; the flusher writes the
// release with the reservation that takes the slot. A holder the informer has not seen (or
// has another pod under its name) still holds the slot: the informer may not have caught
// up. No "no slot" answer reads the API server.
func TestReserve_ASlotIsFreeOnceItsHolderFinishedOrWasDeleted(t *testing.T) {
	cases := map[string]struct {
		holder   *corev1.Pod // in the informer, if not nil
		deleted  bool        // the informer reported the holder's deletion
		wantSlot bool
	}{
		"the holder succeeded":              {holder: holderPod("u-holder", corev1.PodSucceeded), wantSlot: true},
		"the holder failed":                 {holder: holderPod("u-holder", corev1.PodFailed), wantSlot: true},
		"the holder was deleted":            {deleted: true, wantSlot: true},
		"the holder runs":                   {holder: holderPod("u-holder", corev1.PodRunning)},
		"the holder is not in the informer": {},
		"another pod has the holder's name": {holder: holderPod("u-other", corev1.PodSucceeded)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := holderBed()
			if tc.holder != nil {
				objs = append(objs, tc.holder)
			}
			cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
				WithStatusSubresource(&v1alpha1.TestBed{}).WithObjects(objs...).Build()
			var liveGets atomic.Int32
			live := interceptor.NewClient(cl, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					liveGets.Add(1)
					return c.Get(ctx, key, obj, opts...)
				},
			})
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			r := NewReserver(ctx, cl, live, slog.New(slog.DiscardHandler))
			r.FlushInterval = time.Millisecond
			key := types.NamespacedName{Namespace: "default", Name: "bed"}
			newcomer := SlotRequest{TestBed: key, Allowed: []int32{1}, Pod: slots.Pod{Name: "newcomer", UID: "u-new"}}

			_, err := r.Reserve(ctx, newcomer, nil)
			if tc.deleted {
				_, noSlot := errors.AsType[*slots.NoSlotError](err)
				require.True(t, noSlot, "before the deletion is reported: %v", err)
				r.PodDeleted(holderPod("u-holder", corev1.PodRunning))
				_, err = r.Reserve(ctx, newcomer, nil)
			}
			require.Zero(t, liveGets.Load(), "a decision read the API server")
			if !tc.wantSlot {
				_, noSlot := errors.AsType[*slots.NoSlotError](err)
				require.True(t, noSlot, "want no slot, got %v", err)
				require.Equal(t, "holder", statusOf(t, cl).PodName)
				return
			}
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				s := statusOf(t, cl)
				return s.State == v1alpha1.SlotReserved && s.PodUID == "u-new"
			}, 5*time.Second, 5*time.Millisecond, "the release and the reservation were not written")
			require.Zero(t, counted(t, r.conflicts))
			require.Equal(t, 1.0, counted(t, r.releases))
		})
	}
}

// When the slot's slice changed before the flush could write a release with its
// reservation, the flush rereads it: a slot still held by the pod that went, or freed by the reconciler
// meanwhile, is taken as planned; one that another pod holds now is a conflict, and the
// reservation is dropped.
func TestFlush_AReleaseMeetsAChangedStatus(t *testing.T) {
	cases := map[string]struct {
		meanwhile    func(s []v1alpha1.SlotStatus)
		wantHolder   types.UID
		wantConflict float64
	}{
		"another slot changed": {
			meanwhile: func(s []v1alpha1.SlotStatus) {
				s[0].State, s[0].PodName, s[0].PodUID = v1alpha1.SlotReserved, "x", "u-x"
			},
			wantHolder: "u-new",
		},
		"the reconciler freed the slot": {
			meanwhile:  func(s []v1alpha1.SlotStatus) { s[1].State, s[1].PodName, s[1].PodUID = v1alpha1.SlotFree, "", "" },
			wantHolder: "u-new",
		},
		"another pod holds the slot": {
			meanwhile: func(s []v1alpha1.SlotStatus) {
				s[1].State, s[1].PodName, s[1].PodUID = v1alpha1.SlotReserved, "other", "u-other"
			},
			wantHolder:   "u-other",
			wantConflict: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var once sync.Once
			cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
				WithStatusSubresource(&v1alpha1.TestBed{}).
				WithObjects(holderBed()...).WithObjects(holderPod("u-holder", corev1.PodSucceeded)).
				WithInterceptorFuncs(interceptor.Funcs{
					Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
						var err error
						once.Do(func() { // another writer gets there first
							var sl v1alpha1.SlotSlice
							if err = c.Get(ctx, client.ObjectKeyFromObject(obj), &sl); err == nil {
								tc.meanwhile(sl.Slots)
								err = c.Update(ctx, &sl)
							}
						})
						if err != nil {
							return err
						}
						return c.Update(ctx, obj, opts...)
					},
				}).Build()
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			r := NewReserver(ctx, cl, cl, slog.New(slog.DiscardHandler))
			r.FlushInterval = time.Millisecond
			key := types.NamespacedName{Namespace: "default", Name: "bed"}
			_, err := r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{1}, Pod: slots.Pod{Name: "newcomer", UID: "u-new"}}, nil)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				r.known(key).mu.Lock()
				defer r.known(key).mu.Unlock()
				return len(r.known(key).pending) == 0
			}, 5*time.Second, 5*time.Millisecond, "the reservation stays pending")
			require.Equal(t, tc.wantHolder, statusOf(t, cl).PodUID)
			require.Equal(t, tc.wantConflict, counted(t, r.conflicts))
			wantWrites := 2.0 // one refused, one made
			if tc.wantConflict > 0 {
				wantWrites = 1 // nothing left to write
			}
			require.Equal(t, wantWrites, counted(t, r.flushes))
		})
	}
}

// counted is a counter's value.
func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

// A reservation is written into the one slice that holds its slot: on a bed of 300 slots,
// a pod's reservation of slot 250 updates slice 2 and nothing else.
func TestFlush_WritesOnlyTheSliceOfTheSlot(t *testing.T) {
	in := make([]slots.Node, 150)
	for i := range in {
		in[i] = slots.Node{Name: fmt.Sprintf("node-%03d", i), ID: strconv.Itoa(i)}
	}
	var mu sync.Mutex
	written := map[string]int{}
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithObjects(withSlots(testobjects.TestBed("bed").UID("bed-uid").Obj(), slots.Statuses(slots.Layout(in, 2), nil))...).
		WithInterceptorFuncs(interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				mu.Lock()
				written[obj.GetName()]++
				mu.Unlock()
				return c.Update(ctx, obj, opts...)
			},
		}).Build()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := NewReserver(ctx, cl, cl, slog.New(slog.DiscardHandler))
	key := types.NamespacedName{Namespace: "default", Name: "bed"}
	got, err := r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{250}, Pod: slots.Pod{Name: "exec", UID: "u-exec"}}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 250, got.Slot.Position)
	require.Eventually(t, func() bool {
		s, err := slotslices.Read(ctx, cl, testobjects.TestBed("bed").UID("bed-uid").Obj())
		require.NoError(t, err)
		return s[250].State == v1alpha1.SlotReserved && s[250].PodUID == "u-exec"
	}, 5*time.Second, 5*time.Millisecond, "the reservation was not written")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{"bed-slots-2": 1}, written)
}

// A TestBed deleted while the flusher's write is in flight leaves the flush nothing to do:
// the write's answer is dropped with the bed's state, and the flush ends without a panic.
func TestFlush_TheBedIsDeletedDuringTheWrite(t *testing.T) {
	var armed atomic.Bool
	var r *Reserver
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithObjects(withSlots(testobjects.TestBed("bed").UID("bed-uid").Obj(), testSlots())...).
		WithInterceptorFuncs(interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if armed.Load() {
					r.TestBedDeleted(testobjects.TestBed("bed").UID("bed-uid").Obj())
				}
				return c.Update(ctx, obj, opts...)
			},
		}).Build()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r = NewReserver(ctx, cl, cl, slog.New(slog.DiscardHandler))
	r.FlushInterval = time.Hour // after its first write, the flusher waits: the test flushes
	key := types.NamespacedName{Namespace: "default", Name: "bed"}
	_, err := r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{0}, Pod: slots.Pod{Name: "a", UID: "u-a"}}, nil)
	require.NoError(t, err)
	b := r.known(key)
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending) == 0
	}, 5*time.Second, 5*time.Millisecond, "the first reservation was not written")

	_, err = r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{1}, Pod: slots.Pod{Name: "b", UID: "u-b"}}, nil)
	require.NoError(t, err)
	armed.Store(true)
	require.True(t, r.flush(b))
	require.Nil(t, r.known(key), "the deleted bed's state is kept")
	b.mu.Lock()
	defer b.mu.Unlock()
	require.True(t, b.dropped)
	require.Nil(t, b.bed)
	require.Empty(t, b.base)
	require.Empty(t, b.pending)
}
