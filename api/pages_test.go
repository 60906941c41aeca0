package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testobjects"
)

// Lists come in pages of ?limit= items, by name, each with the token of the next; the
// token goes on after the last name given, so an object made between pages is not seen
// twice and none is skipped. A bad limit or token is a 422 naming the field.
func TestLists_ComeInPages(t *testing.T) {
	b := fake.NewClientBuilder().WithScheme(kubeclient.Scheme())
	for i := range 7 {
		b = b.WithObjects(&v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d", 6-i), Namespace: "default"}})
		b = b.WithObjects(testobjects.Scheduling(fmt.Sprintf("s-%d", i)).Obj())
		tb := &v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bed-%d", 6-i), Namespace: "default"}}
		tb.Status.Total, tb.Status.Free = 8, int32(i)
		b = b.WithObjects(tb)
	}
	b = b.WithObjects(&v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}})
	cl := b.Build()
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	h, err := New(Options{Client: cl, Temporal: tc, Auth: StaticTokens{"t": {Name: "alice"}}})
	require.NoError(t, err)
	get := func(path string) (int, []byte) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer t")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.Bytes()
	}

	var names []string
	next := ""
	pages := 0
	for {
		code, body := get("/api/v1/jobs?limit=3&continue=" + next)
		require.Equal(t, http.StatusOK, code, string(body))
		var l apitypes.JobList
		require.NoError(t, json.Unmarshal(body, &l))
		require.LessOrEqual(t, len(l.Items), 3)
		for _, j := range l.Items {
			names = append(names, j.Name)
		}
		pages++
		if pages == 1 { // made between pages: after the first page by name, so it shows
			require.NoError(t, cl.Create(t.Context(), &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "job-3a", Namespace: "default"}}))
		}
		if l.Continue == "" {
			break
		}
		next = l.Continue
	}
	require.Equal(t, []string{"job-0", "job-1", "job-2", "job-3", "job-3a", "job-4", "job-5", "job-6"}, names)
	require.Equal(t, 3, pages)

	code, body := get("/api/v1/schedulings?limit=5")
	require.Equal(t, http.StatusOK, code)
	var sl apitypes.SchedulingList
	require.NoError(t, json.Unmarshal(body, &sl))
	require.Len(t, sl.Items, 5)
	require.NotEmpty(t, sl.Continue)
	code, body = get("/api/v1/schedulings?continue=" + sl.Continue)
	require.Equal(t, http.StatusOK, code)
	var last apitypes.SchedulingList
	require.NoError(t, json.Unmarshal(body, &last))
	require.Len(t, last.Items, 2)
	require.Empty(t, last.Continue, "the last page")

	var beds []string
	for next := ""; ; {
		code, body := get("/api/v1/testbeds?limit=4&continue=" + next)
		require.Equal(t, http.StatusOK, code, string(body))
		var l apitypes.TestBedList
		require.NoError(t, json.Unmarshal(body, &l))
		for _, tb := range l.Items {
			beds = append(beds, tb.Name)
			require.EqualValues(t, 8, tb.Status.Total, "the counts come with the bed")
		}
		if next = l.Continue; next == "" {
			break
		}
	}
	require.Equal(t, []string{"bed-0", "bed-1", "bed-2", "bed-3", "bed-4", "bed-5", "bed-6"}, beds, "the namespace's beds, by name")

	for _, bad := range []string{"limit=0", "limit=1001", "limit=x", "continue=!!!", "continue=bm90LW91cnM"} {
		code, body := get("/api/v1/jobs?" + bad)
		require.Equal(t, http.StatusUnprocessableEntity, code, bad)
		var e apitypes.Error
		require.NoError(t, json.Unmarshal(body, &e), bad)
		require.Equal(t, apitypes.CodeInvalid, e.Code, bad)
		require.NotEmpty(t, e.Fields, bad)
	}
}
