package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"slotplane/metrics"
	"slotplane/slots"
)

// maxBody caps a request: a pod and a list of node names fit easily, a hostile body does not.
const maxBody = 1 << 20

// Handler serves /filter, /preempt, /bind, /healthz and /metrics.
type Handler struct {
	reserver *Reserver
	log      *slog.Logger
	mux      *http.ServeMux
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// ghostsCleared counts the ghosts the filter path deleted for pods placed on room.
	ghostsCleared prometheus.Counter
	// Metrics is the registry /metrics serves, for a plain metrics listener besides.
	Metrics *prometheus.Registry
}

// NewHandler wires the endpoints; ready reports whether the informers have synced.
func NewHandler(r *Reserver, log *slog.Logger, ready func() bool) *Handler {
	reg := metrics.NewRegistry("extender")
	h := &Handler{
		Metrics:  reg,
		reserver: r,
		log:      log,
		mux:      http.NewServeMux(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slotplane_extender_requests_total",
			Help: "Extender calls by verb and result (placed, held, bound, no_slot, bad_request, not_the_pod, unknown_testbed, no_grant, error).",
		}, []string{"verb", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "slotplane_extender_request_seconds",
			Help:    "Time to answer an extender call, including its writes (a binding, a claim, a ghost's deletion).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"verb"}),
		ghostsCleared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "slotplane_extender_ghosts_cleared_total",
			Help: "Ghosts /filter deleted because the pod of their slot was placed on other room of the node.",
		}),
	}
	reg.MustRegister(h.requests, h.latency, h.ghostsCleared)
	reg.MustRegister(r.Collectors()...)
	h.mux.HandleFunc("POST /filter", h.filter)
	h.mux.HandleFunc("POST /preempt", h.preempt)
	h.mux.HandleFunc("POST /bind", h.bind)
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && !ready() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	h.mux.Handle("GET /metrics", metrics.Handler(reg))
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// filter answers with the node of the pod's slot only; every other candidate fails with a
// reason. With no free slot, no node passes, and the scheduler turns to preemption.
func (h *Handler) filter(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := readBody(w, r)
	var args filterCall
	if err == nil {
		names := takeNames()
		// The names are read during the call only: the answer is written before it returns.
		defer func() {
			if cap(args.NodeNames) > cap(*names) {
				*names = args.NodeNames // grown past the lent slice: keep the larger
			}
			giveNames(names)
		}()
		args, err = readFilterCall(body, *names)
	}
	if err != nil {
		h.finish(w, "filter", "bad_request", start, extenderv1.ExtenderFilterResult{Error: err.Error()}, err, "")
		return
	}
	candidates := args.candidates()
	_, req, err := h.request(r.Context(), args.Pod)
	var res Reservation
	if err == nil {
		res, err = h.reserver.Reserve(r.Context(), req, candidates)
	}
	var noSlot *slots.NoSlotError
	switch {
	case errors.As(err, &noSlot):
		h.finish(w, "filter", "no_slot", start, noSlotAnswer{candidates, noSlot}, nil, args.Pod.String())
		return
	case err != nil:
		h.finish(w, "filter", resultOf(err), start, extenderv1.ExtenderFilterResult{Error: err.Error()}, err, args.Pod.String())
		return
	}
	// The slot's ghost goes before the answer: the pod binds on room the scheduler found
	// elsewhere on the node, and must not share its slot with the ghost meanwhile.
	cleared, err := h.reserver.ClearGhost(r.Context(), res)
	if err != nil {
		h.reserver.Unreserve(res, req.Pod)
		h.finish(w, "filter", "error", start, extenderv1.ExtenderFilterResult{Error: err.Error()}, err, args.Pod.String())
		return
	}
	h.ghostsCleared.Add(float64(cleared))
	// Nothing is written for the pod here: its claim goes into its binding (/bind), in the
	// scheduler's binding cycle, so this call, inside the scheduling cycle that places one pod
	// at a time, waits on no write but a ghost's deletion. The other candidates need no
	// reason: the scheduler drops nodes the answer leaves out, and a placed pod's reasons are
	// never shown.
	h.log.Info("slot reserved", "verb", "filter", "pod", args.Pod.String(), "testbed", res.TestBed.String(), "slot", res.Slot.Position, "node", res.Slot.NodeName, "held", res.Held)
	h.finish(w, "filter", placed(res), start, extenderv1.ExtenderFilterResult{NodeNames: &[]string{res.Slot.NodeName}}, nil, "")
}

// preemptResult is the scheduler's preemption answer plus an Error field the scheduler
// ignores but people and logs read.
type preemptResult struct {
	extenderv1.ExtenderPreemptionResult
	Error string `json:",omitempty"`
}

// preempt answers with the node of the pod's slot and that slot's ghost as the only victim,
// whatever the scheduler proposed: the scheduler stops at the first workable preemption,
// but the slot decides where the pod goes. When the slot's ghost is gone and the node is
// still full, the victim is the ghost a pod bound beside it made redundant (DisplacedGhost).
func (h *Handler) preempt(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var args preemptCall
	empty := preemptResult{ExtenderPreemptionResult: extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{}}}
	fail := func(result string, err error) {
		empty.Error = err.Error()
		h.finish(w, "preempt", result, start, empty, err, args.Pod.String())
	}
	body, err := readBody(w, r)
	if err == nil {
		args, err = readPreemptCall(body)
	}
	if err != nil {
		fail("bad_request", err)
		return
	}
	pod, req, err := h.request(r.Context(), args.Pod)
	var res Reservation
	if err == nil {
		res, err = h.reserver.Reserve(r.Context(), req, nil)
	}
	var noSlot *slots.NoSlotError
	if errors.As(err, &noSlot) {
		fail("no_slot", err)
		return
	}
	if err != nil {
		fail(resultOf(err), err)
		return
	}
	// The pod waits for its victim to go and binds a cycle later: its claim is written now,
	// so that a restarted extender finds the slot taken for it meanwhile.
	if err := h.reserver.ClaimSlot(r.Context(), pod, res.Slot.Position); err != nil {
		h.reserver.Unreserve(res, req.Pod)
		fail(resultOf(err), err)
		return
	}
	ghost, err := h.reserver.Ghost(r.Context(), res.TestBed, res.Slot)
	if err != nil {
		ghost, err = h.reserver.DisplacedGhost(r.Context(), res.TestBed, res.Slot)
	}
	if err != nil {
		// The slot stays reserved for the pod; the scheduler retries once the ghost exists.
		fail("no_slot", err)
		return
	}
	h.log.Info("slot reserved", "verb", "preempt", "pod", args.Pod.String(), "testbed", res.TestBed.String(), "slot", res.Slot.Position, "node", res.Slot.NodeName, "victim", ghost.Name, "held", res.Held)
	out := preemptResult{ExtenderPreemptionResult: extenderv1.ExtenderPreemptionResult{
		NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			res.Slot.NodeName: {Pods: []*extenderv1.MetaPod{{UID: string(ghost.UID)}}},
		},
	}}
	h.finish(w, "preempt", placed(res), start, out, nil, "")
}

// bind binds the pod to the node the scheduler chose, in the slot /filter reserved for it,
// and records its claim on the slot in the same write (Reserver.BindPod). The slot is found
// as /filter found it, among the chosen node's slots: the pod's own reservation, or, when
// this process has none (it restarted since its /filter answer), a free slot of the pod's
// on that node, reserved now. With none, the binding fails, and the scheduler tries the pod
// again from the start. A reservation stays when the binding fails for another reason than
// the pod being gone: the binding may have been written all the same, and the pod, bound or
// tried again, holds that slot.
func (h *Handler) bind(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var args bindCall
	fail := func(result string, err error) {
		h.finish(w, "bind", result, start, extenderv1.ExtenderBindingResult{Error: err.Error()}, err, args.Pod.String())
	}
	body, err := readBody(w, r)
	if err == nil {
		args, err = readBindCall(body)
	}
	if err != nil {
		fail("bad_request", err)
		return
	}
	pod, req, err := h.request(r.Context(), &args.Pod)
	var res Reservation
	if err == nil {
		res, err = h.reserver.Reserve(r.Context(), req, []string{args.Node})
	}
	if _, ok := errors.AsType[*slots.NoSlotError](err); ok {
		fail("no_slot", err)
		return
	}
	if err != nil {
		fail(resultOf(err), err)
		return
	}
	if res.Slot.NodeName != args.Node {
		// Reserve chooses among the candidates only, so a pod's own slot elsewhere is no
		// answer here: cannot happen, and a binding must never go where its slot is not.
		fail("error", fmt.Errorf("pod %s holds slot %d on node %s, not on %s", args.Pod.String(), res.Slot.Position, res.Slot.NodeName, args.Node))
		return
	}
	if !res.Held {
		h.log.Info("slot reserved", "verb", "bind", "pod", args.Pod.String(), "testbed", res.TestBed.String(), "slot", res.Slot.Position, "node", res.Slot.NodeName)
	}
	cleared, err := h.reserver.ClearGhost(r.Context(), res)
	if err != nil {
		fail("error", err)
		return
	}
	h.ghostsCleared.Add(float64(cleared))
	if err := h.reserver.BindPod(r.Context(), pod, res.Slot); err != nil {
		fail(resultOf(err), err)
		return
	}
	h.finish(w, "bind", "bound", start, extenderv1.ExtenderBindingResult{}, nil, "")
}

// request reads what the named pod asks for, on the cluster's copy of the pod under the
// call's name and UID: the call's own copy counts for nothing (it is not even decoded).
func (h *Handler) request(ctx context.Context, named *callPod) (*corev1.Pod, SlotRequest, error) {
	if named == nil {
		return nil, SlotRequest{}, fmt.Errorf("%w: the request has no pod", ErrBadPod)
	}
	pod, err := h.reserver.LivePod(ctx, named.key(), named.UID)
	if err != nil {
		return nil, SlotRequest{}, err
	}
	req, err := RequestOf(pod)
	if err != nil {
		return nil, SlotRequest{}, err
	}
	req, err = h.reserver.Granted(ctx, pod, req)
	return pod, req, err
}

func (h *Handler) finish(w http.ResponseWriter, verb, result string, start time.Time, body any, err error, pod string) {
	h.requests.WithLabelValues(verb, result).Inc()
	h.latency.WithLabelValues(verb).Observe(time.Since(start).Seconds())
	if err != nil {
		level := slog.LevelWarn
		if result == "error" {
			level = slog.LevelError
		}
		h.log.Log(context.Background(), level, "extender call failed", "verb", verb, "result", result, "pod", pod, "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	// The scheduler reads the JSON body only on 200; the Error field carries the failure.
	var werr error
	if a, ok := body.(noSlotAnswer); ok {
		_, werr = w.Write(a.appendJSON(nil))
	} else {
		werr = json.NewEncoder(w).Encode(body)
	}
	if werr != nil {
		h.log.Error("write extender answer", "verb", verb, "err", werr)
	}
}

// noSlotAnswer is the /filter answer that fails every candidate, each with the reason for
// its own slots (NoSlotError.Nodes, else OtherNodes): extenderv1.ExtenderFilterResult with
// no node names and those FailedNodes, written by appendJSON rather than encoding/json,
// which would build a map of every candidate and sort it (three quarters of a "no slot"
// call with 1,000 candidates). The reasons are few, and each is quoted once.
type noSlotAnswer struct {
	candidates []string
	noSlot     *slots.NoSlotError
}

// appendJSON appends the answer's JSON, with the fields and the trailing newline
// encoding/json gives it. A candidate named twice is written twice, with its one reason:
// the object means the same to any JSON reader.
func (a noSlotAnswer) appendJSON(b []byte) []byte {
	other := jsonString(a.noSlot.OtherNodes)
	quoted := make(map[string][]byte, len(a.noSlot.Nodes))
	for n, why := range a.noSlot.Nodes {
		quoted[n] = jsonString(why)
	}
	if b == nil {
		b = make([]byte, 0, 96+len(a.candidates)*(len(other)+16))
	}
	b = append(b, `{"Nodes":null,"NodeNames":[],"FailedNodes":{`...)
	for i, n := range a.candidates {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, n)
		b = append(b, ':')
		if why, ok := quoted[n]; ok {
			b = append(b, why...)
		} else {
			b = append(b, other...)
		}
	}
	return append(b, `},"FailedAndUnresolvableNodes":null,"Error":""}`+"\n"...)
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte { return appendJSONString(nil, s) }

// appendJSONString appends s as a JSON string: as it is between quotes when it holds only
// printable ASCII that needs no escape (every node name), else as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func placed(res Reservation) string {
	if res.Held {
		return "held"
	}
	return "placed"
}

func resultOf(err error) string {
	switch {
	case errors.Is(err, ErrBadPod):
		return "bad_request"
	case errors.Is(err, ErrNotThePod):
		return "not_the_pod"
	case errors.Is(err, ErrUnknownTestBed):
		return "unknown_testbed"
	case errors.Is(err, ErrNoGrant):
		return "no_grant"
	}
	return "error"
}
