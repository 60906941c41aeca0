package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/queue"
	"slotplane/workflows"
)

// The gauges the worker reports at each scrape: each test bed's slots, from its status, and
// each queue's jobs and shares, from its Admission workflow's queues query (what the API's
// GET /testbeds/{name}/queues answers). They describe the cluster, not the process: every
// worker replica reports the same values, so aggregate them with max, not sum.
var (
	bedLabels   = []string{"namespace", "testbed"}
	queueLabels = []string{"namespace", "testbed", "queue"}
	shareLabels = []string{"namespace", "testbed", "queue", "resource"}

	slotsDesc = prometheus.NewDesc("slotplane_testbed_slots", "Slots of a test bed by state: free (ghost only), reserved (granted, no pod yet), occupied (a job's pod in it).",
		append(bedLabels, "state"), nil)
	capacityDesc    = prometheus.NewDesc("slotplane_testbed_capacity_slots", "Slots a test bed has on its nodes.", bedLabels, nil)
	utilizationDesc = prometheus.NewDesc("slotplane_testbed_slot_utilization", "Share of a test bed's slots that are not free (reserved or occupied), 0 to 1.", bedLabels, nil)

	pendingDesc = prometheus.NewDesc("slotplane_queue_pending_jobs", "Jobs waiting in a leaf queue for their slots.", queueLabels, nil)
	runningDesc = prometheus.NewDesc("slotplane_queue_admitted_jobs", "Jobs of a leaf queue that hold their slots (granted, starting or running).", queueLabels, nil)
	shareDescs  = []struct {
		desc *prometheus.Desc
		get  func(queue.QueueReport) queue.Resources
	}{
		{prometheus.NewDesc("slotplane_queue_fair_share", "A queue's instantaneous fair share among the queues with demand (cpu in cores, memory in bytes).", shareLabels, nil),
			func(q queue.QueueReport) queue.Resources { return q.FairShare }},
		{prometheus.NewDesc("slotplane_queue_steady_fair_share", "A queue's steady fair share, by weight among all queues.", shareLabels, nil),
			func(q queue.QueueReport) queue.Resources { return q.SteadyShare }},
		{prometheus.NewDesc("slotplane_queue_resource_usage", "What a queue's admitted jobs hold.", shareLabels, nil),
			func(q queue.QueueReport) queue.Resources { return q.Usage }},
		{prometheus.NewDesc("slotplane_queue_resource_demand", "What a queue's jobs hold and ask for.", shareLabels, nil),
			func(q queue.QueueReport) queue.Resources { return q.Demand }},
		{prometheus.NewDesc("slotplane_queue_pending_resources", "What a queue's waiting jobs ask for.", shareLabels, nil),
			func(q queue.QueueReport) queue.Resources { return q.PendingDemand }},
		{prometheus.NewDesc("slotplane_queue_min_resources", "A queue's guaranteed minimum (minResources).", shareLabels, nil),
			func(q queue.QueueReport) queue.Resources { return q.MinResources }},
		{prometheus.NewDesc("slotplane_queue_max_resources", "A queue's cap (maxResources, at most the test bed).", shareLabels, nil),
			func(q queue.QueueReport) queue.Resources { return q.MaxResources }},
	}
)

// QueryTimeout bounds one scrape's query of one test bed's Admission workflow.
const QueryTimeout = 5 * time.Second

// Collector is the worker's scrape-time collector.
type Collector struct {
	// Beds lists the test beds (the worker's watched copies).
	Beds     func(context.Context) ([]v1alpha1.TestBed, error)
	Temporal client.Client
	// IDs names the installation's workflows (zero: the default one).
	IDs installation.Names
	Log *slog.Logger

	errors prometheus.Counter
	once   sync.Once
}

func (c *Collector) init() {
	c.once.Do(func() {
		c.errors = prometheus.NewCounter(prometheus.CounterOpts{Name: "slotplane_queue_report_errors_total",
			Help: "Scrapes that could not read a test bed's queues (its Admission workflow did not answer the query)."})
	})
}

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.init()
	ch <- slotsDesc
	ch <- capacityDesc
	ch <- utilizationDesc
	ch <- pendingDesc
	ch <- runningDesc
	for _, s := range shareDescs {
		ch <- s.desc
	}
	c.errors.Describe(ch)
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.init()
	defer c.errors.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), 2*QueryTimeout)
	defer cancel()
	beds, err := c.Beds(ctx)
	if err != nil {
		c.Log.Warn("metrics: list test beds", "err", err)
		return
	}
	for _, tb := range beds {
		st := tb.Status
		ns, name := tb.Namespace, tb.Name
		ch <- prometheus.MustNewConstMetric(capacityDesc, prometheus.GaugeValue, float64(st.Total), ns, name)
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(st.Free), ns, name, "free")
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(st.Reserved), ns, name, "reserved")
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(st.Occupied), ns, name, "occupied")
		util := 0.0
		if st.Total > 0 {
			util = float64(st.Total-st.Free) / float64(st.Total)
		}
		ch <- prometheus.MustNewConstMetric(utilizationDesc, prometheus.GaugeValue, util, ns, name)
		c.collectQueues(ctx, ch, ns, name)
	}
}

// collectQueues reports one bed's queues. A bed without an Admission workflow yet (no
// Scheduling has used it) has no queues to report; that is not an error.
func (c *Collector) collectQueues(ctx context.Context, ch chan<- prometheus.Metric, ns, bed string) {
	qctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	v, err := c.Temporal.QueryWorkflow(qctx, c.IDs.AdmissionID(ns, bed), "", workflows.QueuesQuery, workflows.ReportOptions{Jobs: -1}) // the queues alone
	var r workflows.AdmissionReport
	if err == nil {
		err = v.Get(&r)
	}
	if err != nil {
		if !isNotFound(err) {
			c.errors.Inc()
			c.Log.Warn("metrics: query a test bed's queues", "testbed", bed, "err", err)
		}
		return
	}
	for _, q := range r.Queues {
		if q.Leaf {
			ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(q.WaitingJobs), ns, bed, q.Path)
			ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, float64(q.RunningJobs), ns, bed, q.Path)
		}
		for _, s := range shareDescs {
			res := s.get(q)
			ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(res.MilliCores)/1000, ns, bed, q.Path, "cpu")
			ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(res.MemoryBytes), ns, bed, q.Path, "memory")
		}
	}
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
