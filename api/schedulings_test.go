package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// jobsJSON writes n jobs of the given replication as a request's list.
func jobsJSON(n int, replication int) string {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf(`{"name":"job-%d","replication":%d}`, i, replication)
	}
	return "[" + strings.Join(jobs, ",") + "]"
}

// A Scheduling's job list is checked by crds/v1alpha1's rules before the cluster is asked:
// a bad one is a 422 that names each field at fault on the request's own paths, for a new
// Scheduling (jobs[i]) as for an extension (append[i], counted with the jobs it has).
func TestSchedulingJobs_RefusedWithTheirFields(t *testing.T) {
	h := newTestHandler(t) // holds Scheduling nightly: QueueBased, one job etl of one slot
	create := func(mode, jobs string) string {
		return fmt.Sprintf(`{"name":"x","testBed":"bed","mode":%q,"jobs":%s}`, mode, jobs)
	}
	cases := []struct {
		name, method, body string
		fields             []string
		text               string
	}{
		{"no jobs", "POST", create("QueueBased", `[]`), []string{"jobs"}, "Required value"},
		{"zero replication", "POST", create("QueueBased", `[{"name":"etl"}]`), []string{"jobs[0].replication"}, "must be from 1 to 1024"},
		{"replication too high", "POST", create("QueueBased", `[{"name":"etl","replication":1025}]`), []string{"jobs[0].replication"}, "1025"},
		{"a job twice", "POST", create("QueueBased", `[{"name":"etl","replication":1},{"name":"etl","replication":1}]`), []string{"jobs[1].name"}, "listed already"},
		{"a job without a name", "POST", create("QueueBased", `[{"name":"","replication":1}]`), []string{"jobs[0].name"}, "Required value"},
		{"too many jobs", "POST", create("QueueBased", jobsJSON(v1alpha1.MaxSchedulingJobs+1, 1)), []string{"jobs"}, "must have at most 1000 items"},
		{"too many slots", "POST", create("QueueBased", jobsJSON(17, 1024)), []string{"jobs"}, "at most 16384 slots together"},
		{"slot-based without slots", "POST", create("SlotBased", `[{"name":"etl","replication":1}]`), []string{"jobs[0].slotIDs"}, "names its slots"},
		{"slot-based with too few slots", "POST", create("SlotBased", `[{"name":"etl","replication":2,"slotIDs":[0]}]`), []string{"jobs[0].slotIDs"}, "one slot per replica"},
		{"queue-based with slots", "POST", create("QueueBased", `[{"name":"etl","replication":1,"slotIDs":[0]}]`), []string{"jobs[0].slotIDs"}, "only allowed in a SlotBased"},
		{"a negative slot and a slot twice", "POST", create("SlotBased", `[{"name":"etl","replication":3,"slotIDs":[-1,2,2]}]`),
			[]string{"jobs[0].slotIDs[0]", "jobs[0].slotIDs[2]"}, "2 fields"},
		{"a negative time to live", "POST", `{"name":"x","testBed":"bed","mode":"QueueBased","ttlSecondsAfterFinished":-5,"jobs":[{"name":"etl","replication":1}]}`, []string{"ttlSecondsAfterFinished"}, "from 0 to 31536000 seconds"},
		{"a bad mode", "POST", create("Fastest", `[{"name":"etl","replication":1}]`), []string{"mode"}, "Unsupported value"},
		{"a bad queue", "POST", `{"name":"x","testBed":"bed","mode":"QueueBased","queue":"root..a","jobs":[{"name":"etl","replication":1}]}`, []string{"queue"}, "dotted path"},
		{"no test bed, said once", "POST", `{"name":"x","testBed":"","mode":"QueueBased","jobs":[{"name":"etl","replication":1}]}`, []string{"testBed"}, "Required value"},
		{"a test bed the API cannot look up", "POST", `{"name":"x","testBed":"Bed_1","mode":"QueueBased","jobs":[{"name":"etl","replication":1}]}`, []string{"testBed"}, "not a valid name"},
		{"every field, in order", "POST", `{"name":"X","testBed":"bed","mode":"QueueBased","queue":".","jobs":[{"name":"a","replication":0},{"name":"a","replication":1}]}`,
			[]string{"name", "queue", "jobs[0].replication", "jobs[1].name"}, "4 fields"},

		{"nothing to append", "PATCH", `{"append":[]}`, []string{"append"}, "at least one job"},
		{"a job it has", "PATCH", `{"append":[{"name":"new","replication":1},{"name":"etl","replication":1}]}`, []string{"append[1].name"}, "in the scheduling already"},
		{"slots in a QueueBased one", "PATCH", `{"append":[{"name":"new","replication":1,"slotIDs":[0]}]}`, []string{"append[0].slotIDs"}, "only allowed in a SlotBased"},
		{"past the most jobs with the one it has", "PATCH", `{"append":` + jobsJSON(v1alpha1.MaxSchedulingJobs, 1) + `}`, []string{"append"}, "1001"},
		{"past the most slots with the one it has", "PATCH", `{"append":` + jobsJSON(16, 1024) + `}`, []string{"append"}, "16385"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/v1/schedulings"
			if tc.method == "PATCH" {
				path += "/nightly"
			}
			req := httptest.NewRequest(tc.method, path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer t")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, http.StatusUnprocessableEntity, rec.Code, rec.Body.String())
			var e apitypes.Error
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			require.Equal(t, apitypes.CodeInvalid, e.Code)
			var fields []string
			for _, f := range e.Fields {
				fields = append(fields, f.Field)
				require.NotEmpty(t, f.Message, f.Field)
			}
			require.Equal(t, tc.fields, fields, e.Message)
			if len(e.Fields) == 1 {
				require.Equal(t, e.Fields[0].Field+": "+e.Fields[0].Message, e.Message)
			}
			require.Contains(t, e.Message, tc.text)
		})
	}
}

// A new Scheduling's jobs are looked up in the API's copy, and on the API server only when
// the copy lacks them: one by one when few, in one list when many. A job in neither does not
// exist.
func TestJobOwners_TheCopyFirstTheAPIServerForWhatItLacks(t *testing.T) {
	job := func(name, user string) *v1alpha1.BatchJob {
		return &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1alpha1.BatchJobSpec{User: user}}
	}
	var live []client.Object
	for i := range liveJobReads + 1 {
		live = append(live, job(fmt.Sprintf("new-%d", i), "bob"))
	}
	var reads, lists int
	apiServer := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(append(live, job("etl", "alice"))...).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				reads++
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				lists++
				return c.List(ctx, list, opts...)
			},
		}).Build()
	copied := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(job("etl", "alice")).Build()
	s := &server{Options: Options{Client: apiServer, Reader: copied}}
	named := func(names ...string) []v1alpha1.SchedulingJob {
		var out []v1alpha1.SchedulingJob
		for _, n := range names {
			out = append(out, v1alpha1.SchedulingJob{Name: n, Replication: 1})
		}
		return out
	}

	owners, err := s.jobOwners(context.Background(), "ns", named("etl"))
	require.NoError(t, err)
	require.Equal(t, "alice", *owners["etl"])
	require.Equal(t, [2]int{0, 0}, [2]int{reads, lists}, "the copy has every job: no API read")

	owners, err = s.jobOwners(context.Background(), "ns", named("etl", "new-0", "gone"))
	require.NoError(t, err)
	require.Equal(t, "bob", *owners["new-0"], "a job the copy lacks is read from the API server")
	require.Nil(t, owners["gone"], "a job in neither does not exist")
	require.Equal(t, [2]int{2, 0}, [2]int{reads, lists})

	reads = 0
	var many []string
	for i := range liveJobReads + 1 {
		many = append(many, fmt.Sprintf("new-%d", i))
	}
	owners, err = s.jobOwners(context.Background(), "ns", named(many...))
	require.NoError(t, err)
	for _, n := range many {
		require.NotNil(t, owners[n], n)
	}
	require.Equal(t, [2]int{0, 1}, [2]int{reads, lists}, "many missing: one list")
}
