package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
)

// Job is a BatchJob as the API shows it.
type Job struct {
	Name            string             `json:"name"`
	Namespace       string             `json:"namespace"`
	ResourceVersion string             `json:"resourceVersion"`
	Framework       v1alpha1.Framework `json:"framework"`
	Queue           string             `json:"queue,omitempty"`
	User            string             `json:"user,omitempty"`
	// Scheduling is the Scheduling that holds the job now; empty once it is released.
	Scheduling string                  `json:"scheduling,omitempty"`
	Status     v1alpha1.BatchJobStatus `json:"status"`
}

// jobOf shows a BatchJob. Its Scheduling is the one whose claim it carries now (the claim
// label): the status's scheduling is written after the claim is, and lags a release.
func jobOf(j *v1alpha1.BatchJob) Job {
	return Job{Name: j.Name, Namespace: j.Namespace, ResourceVersion: j.ResourceVersion, Framework: j.Spec.Framework,
		Queue: j.Spec.Queue, User: j.Spec.User, Scheduling: j.Labels[v1alpha1.ActiveSchedulingLabel], Status: j.Status}
}

var jobStates = []v1alpha1.BatchJobState{v1alpha1.JobReady, v1alpha1.JobInQueue, v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobCompleted, v1alpha1.JobFailed}

// listJobs lists the namespace's BatchJobs, filtered by ?state=, ?queue= and ?scheduling=
// (each optional; all given must match). A job without a state is Ready.
func (s *server) listJobs(c *gin.Context) {
	state := v1alpha1.BatchJobState(c.Query("state"))
	if state != "" && !slices.Contains(jobStates, state) {
		names := make([]string, len(jobStates))
		for i, st := range jobStates {
			names[i] = string(st)
		}
		fail(c, invalid(FieldError{Field: "state", Message: fmt.Sprintf("%q is not a job state (%s)", state, strings.Join(names, ", "))}))
		return
	}
	queue, sched := c.Query("queue"), c.Query("scheduling")
	var list v1alpha1.BatchJobList
	if err := s.Client.List(c.Request.Context(), &list, client.InNamespace(namespaceOf(c))); err != nil {
		fail(c, fromKube("list batch jobs", err))
		return
	}
	out := []Job{}
	for i := range list.Items {
		j := jobOf(&list.Items[i])
		st := j.Status.State
		if st == "" {
			st = v1alpha1.JobReady
		}
		if (state != "" && st != state) || (sched != "" && j.Scheduling != sched) || (queue != "" && !sameQueue(j.Queue, queue)) {
			continue
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b Job) int { return strings.Compare(a.Name, b.Name) })
	c.JSON(http.StatusOK, gin.H{"items": out, "resourceVersion": list.ResourceVersion})
}

// sameQueue compares queue paths with "root." optional on either side.
func sameQueue(a, b string) bool {
	full := func(p string) string {
		if p == "root" || strings.HasPrefix(p, "root.") {
			return p
		}
		return "root." + p
	}
	return full(a) == full(b)
}

func (s *server) getJob(c *gin.Context) {
	var job v1alpha1.BatchJob
	if err := s.get(c, "batch job", &job); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, jobOf(&job))
}

// get reads the object named in the path, in the request's namespace; what names its kind
// in the 404's message.
func (s *server) get(c *gin.Context, what string, obj client.Object) error {
	key := client.ObjectKey{Namespace: namespaceOf(c), Name: c.Param("name")}
	if err := s.Client.Get(c.Request.Context(), key, obj); err != nil {
		if e := fromKube("get "+what, err); e.Code != CodeNotFound {
			return e
		}
		return notFound("%s %s does not exist in namespace %s", what, key.Name, key.Namespace)
	}
	return nil
}

// TestBed is a test bed with its slots.
type TestBed struct {
	Name            string                 `json:"name"`
	Namespace       string                 `json:"namespace"`
	ResourceVersion string                 `json:"resourceVersion"`
	Spec            v1alpha1.TestBedSpec   `json:"spec"`
	Status          v1alpha1.TestBedStatus `json:"status"`
}

func (s *server) getTestBed(c *gin.Context) {
	var tb v1alpha1.TestBed
	if err := s.get(c, "test bed", &tb); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, testBedOf(&tb))
}

func testBedOf(tb *v1alpha1.TestBed) TestBed {
	return TestBed{Name: tb.Name, Namespace: tb.Namespace, ResourceVersion: tb.ResourceVersion, Spec: tb.Spec, Status: tb.Status}
}

func keyOf(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
