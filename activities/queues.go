package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// AllocationFileRef names the ConfigMap keys that hold a test bed's allocation file and its
// settings, and the versions of them the caller holds (in force and rejected).
type AllocationFileRef struct {
	Namespace string
	ConfigMap string
	// Key defaults to fair-scheduler.xml, SettingsKey to yarn-site.xml.
	Key, SettingsKey string
	// Version and RejectedVersion are what the caller holds: files of either version are
	// not sent back.
	Version, RejectedVersion string
	// Fresh reads the API server even when the worker's copy shows no change: the caller
	// was told the file changed, and the copy may not have the change yet.
	Fresh bool `json:",omitempty"`
}

// DefaultAllocationFileKey and DefaultSettingsKey are the ConfigMap keys read when none is
// given.
const (
	DefaultAllocationFileKey = v1alpha1.QueuesConfigMapKey
	DefaultSettingsKey       = v1alpha1.QueuesSettingsKey
)

// LoadAllocationFile reads a test bed's allocation file and settings from its ConfigMap and
// parses them here, out of workflow code. It answers nil when the ConfigMap is the version
// the caller holds (so unchanged files never enter the workflow's history), else the new
// configuration or why it was rejected: a mistake in either file rejects both, and the last
// good pair stays in force. A missing ConfigMap, or neither key, means the defaults; one key
// missing, that file's defaults.
//
// Admission runs it when the worker's copy shows a change (AllocationFileUnchanged is
// false) or it was told the file changed (Fresh). Unless in is Fresh, the copy answers
// first here too, and only that nothing changed. A change the copy shows is read from
// the API server before it is sent, so a copy that lags never puts an older file in force
// after a newer one; a change the copy does not show yet comes with the next resync, or at
// once through the signal that sets Fresh.
func (a *Activities) LoadAllocationFile(ctx context.Context, in AllocationFileRef) (*queue.ConfigUpdate, error) {
	if !in.Fresh && a.Changes.AllocationFileUnchanged(ctx, in) {
		return nil, nil
	}
	f, version, err := readAllocationFiles(ctx, a.Client, in)
	if err != nil {
		return nil, err
	}
	return queue.ReadConfigFiles(heldConfig(in), f, version), nil
}

// AllocationFileUnchanged says whether the worker's copy shows the allocation file at the
// version in holds, without waiting on anything: false when there is no synced copy, it
// fails to read, or it shows another version. Admission asks this inside a side effect at
// each resync, and runs LoadAllocationFile only on false.
func (c *Changes) AllocationFileUnchanged(ctx context.Context, in AllocationFileRef) bool {
	r := c.queuesReader(in.ConfigMap)
	if r == nil {
		return false
	}
	f, version, err := readAllocationFiles(ctx, r, in)
	return err == nil && queue.ConfigUnchanged(heldConfig(in), f, version)
}

// heldConfig is the configuration version in says its caller holds.
func heldConfig(in AllocationFileRef) queue.Config {
	return queue.Config{Version: in.Version, RejectedVersion: in.RejectedVersion}
}

// readAllocationFiles reads from r the allocation file and the settings that in names, with
// their version: "" and neither file when the ConfigMap does not exist.
func readAllocationFiles(ctx context.Context, r client.Reader, in AllocationFileRef, opts ...client.GetOption) (queue.ConfigFiles, string, error) {
	key := cmp.Or(in.Key, DefaultAllocationFileKey)
	settingsKey := cmp.Or(in.SettingsKey, DefaultSettingsKey)
	var cm corev1.ConfigMap
	if err := r.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.ConfigMap}, &cm, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			return queue.ConfigFiles{}, "", nil
		}
		return queue.ConfigFiles{}, "", fmt.Errorf("get configmap %s/%s: %w", in.Namespace, in.ConfigMap, err)
	}
	var f queue.ConfigFiles
	alloc, hasAlloc := cm.Data[key]
	settings, hasSettings := cm.Data[settingsKey]
	f.Allocations, f.HasAllocations = []byte(alloc), hasAlloc
	f.Settings, f.HasSettings = []byte(settings), hasSettings
	// The resourceVersion changes with either key; the keys are in the version too, so that
	// another pair of keys of the same ConfigMap is another version.
	return f, cm.ResourceVersion + "/" + key + "+" + settingsKey, nil
}

// CheckHoldsInput lists the admission keys one test bed's Admission holds.
type CheckHoldsInput struct {
	Namespace string
	// TestBed, when set, asks also for the runs granted in it that Keys lack (HoldsCheck.Found).
	TestBed string `json:",omitempty"`
	Keys    JobKeys
}

// HoldsCheck is CheckHolds' answer: the keys nobody holds any more, and the granted runs the
// keys lack.
type HoldsCheck struct {
	Unheld UnheldKeys   `json:",omitempty"`
	Found  []FoundGrant `json:",omitempty"`
}

// FoundGrant is a run granted in the test bed that its Admission does not hold: its job is
// held by a live Scheduling whose creation request names the bed, and the run has not ended.
// An Admission whose workflow started anew learns its grants from them; one that runs learns
// a grant it made and lost (its run ended after the grant went out, before its task was
// recorded).
type FoundGrant struct {
	Key     queue.JobKey
	Job     JobInfo
	Granted GrantedRun
}

// JobKeys are admission keys as they pass to an activity: packed (queue.PackKeys), for a
// bed's keys are every job it holds or keeps waiting, and as JSON 18,000 of them are
// Temporal's 2 MB payload limit.
type JobKeys []queue.JobKey

// MarshalJSON writes the keys packed, as a base64 string.
func (k JobKeys) MarshalJSON() ([]byte, error) {
	notes := make([]queue.KeyNote, len(k))
	for i := range k {
		notes[i].Key = k[i]
	}
	return marshalPacked(notes)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (k *JobKeys) UnmarshalJSON(data []byte) error {
	notes, err := unmarshalPacked(data)
	*k = make(JobKeys, len(notes))
	for i := range notes {
		(*k)[i] = notes[i].Key
	}
	return err
}

// marshalPacked writes keys with notes as JSON: a base64 string of queue.PackKeys.
func marshalPacked(notes []queue.KeyNote) ([]byte, error) {
	b, err := queue.PackKeys(notes)
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// unmarshalPacked reads what marshalPacked wrote.
func unmarshalPacked(data []byte) ([]queue.KeyNote, error) {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, err
	}
	return queue.UnpackKeys(b)
}

// Unheld is a key nobody needs any more, and why (Reason: one of the Unheld* reasons).
type Unheld struct {
	Key    queue.JobKey
	Reason string
}

// Why nobody holds an Unheld key: its Reason, as a sentence.
const (
	UnheldJobDeleted        = "job-deleted"
	UnheldNotHeld           = "not-held"
	UnheldSchedulingDeleted = "scheduling-deleted"
	UnheldSchedulingRemade  = "scheduling-remade"
	// UnheldRunEnded is followed by the run's state: "run-ended Completed".
	UnheldRunEnded = "run-ended"
)

// Why is the reason as a sentence.
func (u Unheld) Why() string {
	k := u.Key
	switch code, state, _ := strings.Cut(u.Reason, " "); code {
	case UnheldJobDeleted:
		return fmt.Sprintf("BatchJob %s was deleted", k.Job)
	case UnheldNotHeld:
		return fmt.Sprintf("BatchJob %s is no longer held by scheduling %s", k.Job, k.Scheduling)
	case UnheldSchedulingDeleted:
		return fmt.Sprintf("scheduling %s was deleted", k.Scheduling)
	case UnheldSchedulingRemade:
		return fmt.Sprintf("scheduling %s was deleted and made again", k.Scheduling)
	case UnheldRunEnded:
		return fmt.Sprintf("BatchJob %s's run %d ended %s", k.Job, k.Run, state)
	}
	return u.Reason
}

// UnheldKeys are CheckHolds' answer: packed as JobKeys are, each key's reason its note, for
// when a Scheduling goes every key it held comes back.
type UnheldKeys []Unheld

// MarshalJSON writes the keys and their reasons packed, as a base64 string.
func (u UnheldKeys) MarshalJSON() ([]byte, error) {
	notes := make([]queue.KeyNote, len(u))
	for i := range u {
		notes[i] = queue.KeyNote{Key: u[i].Key, Note: u[i].Reason}
	}
	return marshalPacked(notes)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (u *UnheldKeys) UnmarshalJSON(data []byte) error {
	notes, err := unmarshalPacked(data)
	*u = make(UnheldKeys, len(notes))
	for i := range notes {
		(*u)[i] = Unheld{Key: notes[i].Key, Reason: notes[i].Note}
	}
	return err
}

// CheckHolds finds the keys no Scheduling holds any more: the BatchJob is gone or held by
// another Scheduling (or none), the Scheduling is gone or is a newer one of the same name, or
// the job's run ended. Admission releases them: a release that got lost cannot keep slots.
//
// Admission asks every Resync, under load too, for every key it holds: the jobs come from
// the worker's copy when it has synced, and only a key the copy finds unheld is checked
// again against the job in etcd (a copy that lags behind a new claim must not release a
// held job); the Schedulings are read as their metadata, without their statuses.
func (a *Activities) CheckHolds(ctx context.Context, in CheckHoldsInput) (HoldsCheck, error) {
	if len(in.Keys) == 0 && in.TestBed == "" {
		return HoldsCheck{}, nil
	}
	var r client.Reader = a.Client
	fromCopy := false
	if c := a.Changes.reader(v1alpha1.GroupVersion.WithKind("BatchJob")); c != nil {
		r, fromCopy = c, true
	}
	var jobs v1alpha1.BatchJobList
	if err := r.List(ctx, &jobs, client.InNamespace(in.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return HoldsCheck{}, fmt.Errorf("list batchjobs of %s: %w", in.Namespace, err)
	}
	byName := make(map[string]*v1alpha1.BatchJob, len(jobs.Items))
	for i := range jobs.Items {
		byName[jobs.Items[i].Name] = &jobs.Items[i]
	}
	schedulings := &metav1.PartialObjectMetadataList{}
	schedulings.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("SchedulingList"))
	if err := a.Client.List(ctx, schedulings, client.InNamespace(in.Namespace)); err != nil {
		return HoldsCheck{}, fmt.Errorf("list schedulings of %s: %w", in.Namespace, err)
	}
	uids := make(map[string]string, len(schedulings.Items))
	for _, s := range schedulings.Items {
		uids[s.Name] = string(s.UID)
	}
	var out HoldsCheck
	for _, k := range in.Keys {
		why := unheldWhy(k, byName[k.Job], uids)
		if why != "" && fromCopy {
			// The copy's word is checked against etcd's before anything is released.
			var live v1alpha1.BatchJob
			err := a.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: k.Job}, &live)
			switch {
			case apierrors.IsNotFound(err):
				why = unheldWhy(k, nil, uids)
			case err != nil:
				return HoldsCheck{}, fmt.Errorf("get batchjob %s/%s: %w", in.Namespace, k.Job, err)
			default:
				why = unheldWhy(k, &live, uids)
			}
		}
		if why != "" {
			out.Unheld = append(out.Unheld, Unheld{Key: k, Reason: why})
		}
	}
	if in.TestBed == "" {
		return out, nil
	}
	held := indexKeys(in.Keys)
	for _, f := range held.lacking(jobs.Items, in.TestBed, uids) {
		if fromCopy {
			// A grant the copy shows may have been released since: etcd has the last word.
			var live v1alpha1.BatchJob
			err := a.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: f.Key.Job}, &live)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return HoldsCheck{}, fmt.Errorf("get batchjob %s/%s: %w", in.Namespace, f.Key.Job, err)
			}
			var ok bool
			if f, ok = held.foundGrant(&live, in.TestBed, uids); !ok {
				continue
			}
		}
		out.Found = append(out.Found, f)
	}
	return out, nil
}

// heldKeys index the keys an Admission holds: by key, and by (Scheduling, job).
type heldKeys struct {
	known  map[queue.JobKey]bool
	heldBy map[[2]string]bool
}

func indexKeys(keys []queue.JobKey) heldKeys {
	h := heldKeys{known: make(map[queue.JobKey]bool, len(keys)), heldBy: make(map[[2]string]bool, len(keys))}
	for _, k := range keys {
		h.known[k] = true
		h.heldBy[[2]string{k.Scheduling, k.Job}] = true
	}
	return h
}

// lacking are the runs granted in bed, among jobs, that the keys lack (see FoundGrant). A
// job whose holder has a key for it is passed over without reading its creation request:
// the read is most of the scan's cost, and a bed's jobs are nearly all known.
func (h heldKeys) lacking(jobs []v1alpha1.BatchJob, bed string, uids map[string]string) []FoundGrant {
	var out []FoundGrant
	for i := range jobs {
		if h.heldBy[[2]string{jobs[i].Labels[v1alpha1.ActiveSchedulingLabel], jobs[i].Name}] {
			continue
		}
		if f, ok := h.foundGrant(&jobs[i], bed, uids); ok {
			out = append(out, f)
		}
	}
	return out
}

// foundGrant is job's granted run in bed, if it has one the keys lack (see FoundGrant).
func (h heldKeys) foundGrant(job *v1alpha1.BatchJob, bed string, uids map[string]string) (FoundGrant, bool) {
	g := grantedRun(job)
	if g == nil || g.Request.TestBed != bed || g.State.Ended() || uids[g.Request.Scheduling] != g.Request.SchedulingUID {
		return FoundGrant{}, false
	}
	k := queue.JobKey{Scheduling: g.Request.Scheduling, SchedulingUID: g.Request.SchedulingUID, Job: job.Name, Run: g.Request.Run}
	if h.known[k] {
		return FoundGrant{}, false
	}
	info := jobInfo(job)
	info.Granted = nil
	return FoundGrant{Key: k, Job: info, Granted: *g}, true
}

// unheldWhy says why nobody holds k any more (an Unheld reason), given its job (nil:
// deleted) and the UIDs of the namespace's Schedulings by name; "" when it is still held.
func unheldWhy(k queue.JobKey, job *v1alpha1.BatchJob, uids map[string]string) string {
	uid, exists := uids[k.Scheduling]
	switch {
	case job == nil:
		return UnheldJobDeleted
	case job.Labels[v1alpha1.ActiveSchedulingLabel] != k.Scheduling:
		return UnheldNotHeld
	case !exists:
		return UnheldSchedulingDeleted
	case k.SchedulingUID != "" && uid != k.SchedulingUID:
		return UnheldSchedulingRemade
	case job.Status.Scheduling == k.Scheduling && job.Status.Run == k.Run && job.Status.State.Ended():
		return UnheldRunEnded + " " + string(job.Status.State)
	}
	return ""
}

// QueueResources reads a Kubernetes resource list as the queues' resources, exactly: memory
// in bytes and cpu in millicores (a driver of 250m counts as a quarter of a vcore, not a
// whole one).
func QueueResources(l corev1.ResourceList) queue.Resources {
	var r queue.Resources
	if m, ok := l[corev1.ResourceMemory]; ok {
		r.MemoryBytes = m.Value()
	}
	if c, ok := l[corev1.ResourceCPU]; ok {
		r.MilliCores = c.MilliValue()
	}
	return r
}

// DriverSize is the admission size of the job's driver or JobManager: its resources, or the
// application builder's default of 1 GiB and one core when the job gives none.
func (i JobInfo) DriverSize() queue.Resources {
	if r := QueueResources(i.Driver); !r.IsZero() {
		return r
	}
	return queue.MBVCores(1024, 1)
}
