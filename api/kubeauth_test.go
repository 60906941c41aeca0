package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// reviewClient answers the reviews KubeTokens and KubeAccess create, counting them. Every
// other method of client.Client is left nil: calling one panics.
type reviewClient struct {
	client.Client
	calls  atomic.Int32
	answer func(obj client.Object) error
}

func (f *reviewClient) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	f.calls.Add(1)
	return f.answer(obj)
}

// clock is a settable time for a reviewCache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestReviewCache_ExpiresAndStaysBounded(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := newReviewCache[string, int](3)
	c.now = clk.now

	c.put("a", 1, 10*time.Second)
	v, ok := c.get("a")
	require.True(t, ok)
	require.Equal(t, 1, v)
	clk.add(9 * time.Second)
	_, ok = c.get("a")
	require.True(t, ok, "still fresh a second before it expires")
	clk.add(time.Second)
	_, ok = c.get("a")
	require.False(t, ok, "expired at its TTL")
	require.Zero(t, c.size(), "an expired entry that is read is dropped")

	c.put("zero", 1, 0)
	c.put("negative", 1, -time.Second)
	require.Zero(t, c.size(), "a TTL that is not positive caches nothing")

	// Full of fresh entries: a new key empties the cache; an existing key is just replaced.
	c.put("a", 1, time.Minute)
	c.put("b", 2, time.Minute)
	c.put("c", 3, time.Minute)
	c.put("b", 20, time.Minute)
	require.Equal(t, 3, c.size())
	v, _ = c.get("b")
	require.Equal(t, 20, v)
	c.put("d", 4, time.Minute)
	require.Equal(t, 1, c.size(), "full of fresh entries: all dropped")
	_, ok = c.get("a")
	require.False(t, ok)
	v, ok = c.get("d")
	require.True(t, ok)
	require.Equal(t, 4, v)

	// Full with some expired: only those go.
	c.put("short", 5, time.Second)
	c.put("long", 6, time.Hour)
	clk.add(2 * time.Second)
	c.put("e", 7, time.Minute)
	require.Equal(t, 3, c.size(), "the expired entry made room")
	for _, k := range []string{"d", "long", "e"} {
		_, ok := c.get(k)
		require.True(t, ok, k)
	}
}

func TestReviewCache_Concurrent(t *testing.T) {
	c := newReviewCache[int, int](64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				c.put(g*1000+i, i, time.Minute)
				c.get(i)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, c.size(), 64)
}

func tokenReviewer(t *testing.T) *reviewClient {
	return &reviewClient{answer: func(obj client.Object) error {
		tr, ok := obj.(*authnv1.TokenReview)
		require.True(t, ok, "%T", obj)
		switch tr.Spec.Token {
		case "good":
			tr.Status = authnv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"slotplane"}, User: authnv1.UserInfo{
				Username: "system:serviceaccount:ns:bot", UID: "uid-1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
				Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"p"}},
			}}
		case "flaky":
			return errors.New("connection refused")
		default:
			tr.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return nil
	}}
}

func TestKubeTokens(t *testing.T) {
	ctx := context.Background()
	rc := tokenReviewer(t)
	k := &KubeTokens{Client: rc}

	for range 3 {
		u, err := k.Authenticate(ctx, "good")
		require.NoError(t, err)
		require.Equal(t, apitypes.User{Name: "system:serviceaccount:ns:bot", UID: "uid-1", Groups: []string{"system:serviceaccounts", "system:authenticated"},
			Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"p"}}}, u)
	}
	require.EqualValues(t, 1, rc.calls.Load(), "one review for a token used three times")

	for range 2 {
		_, err := k.Authenticate(ctx, "garbage")
		require.ErrorIs(t, err, ErrUnknownToken)
		require.ErrorContains(t, err, "invalid bearer token")
	}
	require.EqualValues(t, 2, rc.calls.Load(), "an unknown token is cached too")

	for range 2 {
		_, err := k.Authenticate(ctx, "flaky")
		require.Error(t, err)
		require.NotErrorIs(t, err, ErrUnknownToken, "a failed review is not a 401")
		require.ErrorContains(t, err, "connection refused")
	}
	require.EqualValues(t, 4, rc.calls.Load(), "a failed review is never cached")

	_, err := k.Authenticate(ctx, "")
	require.ErrorIs(t, err, ErrUnknownToken)
	require.EqualValues(t, 4, rc.calls.Load(), "an empty token is not sent")

	// After the TTL, the token is reviewed again.
	clk := &clock{t: time.Now().Add(24 * time.Hour)} // what is cached so far has expired
	k.cache.now = clk.now
	_, err = k.Authenticate(ctx, "good")
	require.NoError(t, err)
	require.EqualValues(t, 5, rc.calls.Load())
	clk.add(DefaultReviewTTL - time.Millisecond)
	_, err = k.Authenticate(ctx, "good")
	require.NoError(t, err)
	require.EqualValues(t, 5, rc.calls.Load())
	clk.add(time.Millisecond)
	_, err = k.Authenticate(ctx, "good")
	require.NoError(t, err)
	require.EqualValues(t, 6, rc.calls.Load(), "reviewed again after DefaultReviewTTL")

	t.Run("no cache", func(t *testing.T) {
		rc := tokenReviewer(t)
		k := &KubeTokens{Client: rc, TTL: -1}
		for range 3 {
			_, err := k.Authenticate(ctx, "good")
			require.NoError(t, err)
		}
		require.EqualValues(t, 3, rc.calls.Load())
	})
	t.Run("audiences", func(t *testing.T) {
		var asked []string
		rc := tokenReviewer(t)
		inner := rc.answer
		rc.answer = func(obj client.Object) error {
			asked = obj.(*authnv1.TokenReview).Spec.Audiences
			return inner(obj)
		}
		_, err := (&KubeTokens{Client: rc, Audiences: []string{"slotplane", "other"}}).Authenticate(ctx, "good")
		require.NoError(t, err)
		require.Equal(t, []string{"slotplane", "other"}, asked)
		_, err = (&KubeTokens{Client: rc, Audiences: []string{"other"}}).Authenticate(ctx, "good")
		require.ErrorIs(t, err, ErrUnknownToken, "authenticated, but for none of the audiences asked for")
	})
}

func TestKubeAccess(t *testing.T) {
	ctx := context.Background()
	var last authzv1.SubjectAccessReviewSpec
	rc := &reviewClient{answer: func(obj client.Object) error {
		sar, ok := obj.(*authzv1.SubjectAccessReview)
		require.True(t, ok, "%T", obj)
		last = sar.Spec
		ra := sar.Spec.ResourceAttributes
		switch {
		case ra.Namespace == "broken":
			return errors.New("the server is currently unable to handle the request")
		case ra.Namespace == "odd":
			sar.Status = authzv1.SubjectAccessReviewStatus{EvaluationError: `role.rbac.authorization.k8s.io "reader" not found`}
		case ra.Namespace == "webhook":
			sar.Status = authzv1.SubjectAccessReviewStatus{Denied: true, Reason: "the batch team only"}
		case ra.Verb == "list" && ra.Resource == "schedulings":
			sar.Status = authzv1.SubjectAccessReviewStatus{Allowed: true, Reason: `RBAC: allowed by RoleBinding "r"`}
		}
		return nil
	}}
	k := &KubeAccess{Client: rc}
	alice := apitypes.User{Name: "alice", UID: "u1", Groups: []string{"analysts"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	list := Action{Group: v1alpha1.GroupName, Verb: "list", Resource: "schedulings", Namespace: "team"}

	for range 3 {
		ok, reason, err := k.Authorize(ctx, alice, list)
		require.NoError(t, err)
		require.True(t, ok)
		require.Empty(t, reason)
	}
	require.EqualValues(t, 1, rc.calls.Load())
	require.Equal(t, authzv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "team", Verb: "list", Group: "slotplane.io", Resource: "schedulings"},
		User:               "alice", UID: "u1", Groups: []string{"analysts"}, Extra: map[string]authzv1.ExtraValue{"scopes": {"a", "b"}},
	}, last)

	move := Action{Group: v1alpha1.GroupName, Verb: "update", Resource: "batchjobs", Subresource: "move", Namespace: "team", Name: "etl"}
	for range 2 {
		ok, reason, err := k.Authorize(ctx, alice, move)
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, `no RBAC rule allows it (it takes a Role or ClusterRole granting the verb "update" on "batchjobs/move" in the API group "slotplane.io", bound to the user or one of its groups)`, reason)
	}
	require.EqualValues(t, 2, rc.calls.Load(), "a denial is cached too")
	require.Equal(t, &authzv1.ResourceAttributes{Namespace: "team", Verb: "update", Group: "slotplane.io", Resource: "batchjobs", Subresource: "move", Name: "etl"}, last.ResourceAttributes)

	// Another user, or the same one in other groups, is another question.
	_, _, err := k.Authorize(ctx, apitypes.User{Name: "alice"}, list)
	require.NoError(t, err)
	require.EqualValues(t, 3, rc.calls.Load())

	ok, reason, err := k.Authorize(ctx, alice, Action{Group: v1alpha1.GroupName, Verb: "get", Resource: "testbeds", Namespace: "webhook", Name: "bed"})
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, "the batch team only", reason)

	ok, reason, err = k.Authorize(ctx, alice, Action{Group: v1alpha1.GroupName, Verb: "get", Resource: "testbeds", Namespace: "odd", Name: "bed"})
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, `the cluster could not evaluate every rule: role.rbac.authorization.k8s.io "reader" not found`, reason)

	calls := rc.calls.Load()
	for range 2 {
		_, _, err = k.Authorize(ctx, alice, Action{Group: v1alpha1.GroupName, Verb: "get", Resource: "testbeds", Namespace: "broken"})
		require.ErrorContains(t, err, "unable to handle the request")
	}
	require.EqualValues(t, calls+2, rc.calls.Load(), "a failed review is never cached")

	t.Run("separate TTLs", func(t *testing.T) {
		rc.calls.Store(0)
		k := &KubeAccess{Client: rc, AllowedTTL: -1, DeniedTTL: time.Hour}
		for range 2 {
			_, _, err := k.Authorize(ctx, alice, list)
			require.NoError(t, err)
			_, _, err = k.Authorize(ctx, alice, move)
			require.NoError(t, err)
		}
		require.EqualValues(t, 3, rc.calls.Load(), "allowed every time, denied once")

		clk := &clock{t: time.Now().Add(24 * time.Hour)} // what is cached so far has expired
		k.cache.now = clk.now
		_, _, _ = k.Authorize(ctx, alice, move)
		require.EqualValues(t, 4, rc.calls.Load())
		clk.add(59 * time.Minute)
		_, _, _ = k.Authorize(ctx, alice, move)
		require.EqualValues(t, 4, rc.calls.Load())
		clk.add(time.Minute)
		_, _, _ = k.Authorize(ctx, alice, move)
		require.EqualValues(t, 5, rc.calls.Load())
	})
}

// Through the handler: a failed token review is a 503, an unknown token a 401, a denial a
// 403 with the reason.
func TestKubeAuth_Answers(t *testing.T) {
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	defer tc.Close()
	rc := tokenReviewer(t)
	inner := rc.answer
	rc.answer = func(obj client.Object) error {
		if _, ok := obj.(*authzv1.SubjectAccessReview); ok {
			return nil // denied, no reason
		}
		return inner(obj)
	}
	h, err := New(Options{Client: rc, Temporal: tc, Auth: &KubeTokens{Client: rc}, Authorizer: &KubeAccess{Client: rc}})
	require.NoError(t, err)
	for token, want := range map[string]struct {
		status int
		code   string
	}{
		"flaky":   {http.StatusServiceUnavailable, apitypes.CodeUnavailable},
		"garbage": {http.StatusUnauthorized, apitypes.CodeUnauthorized},
		"good":    {http.StatusForbidden, apitypes.CodeForbidden},
	} {
		t.Run(token, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/api/v1/schedulings?namespace=team", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			h.ServeHTTP(rec, req)
			require.Equal(t, want.status, rec.Code, rec.Body.String())
			var e apitypes.Error
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			require.Equal(t, want.code, e.Code)
			if token == "good" {
				require.Equal(t, `user system:serviceaccount:ns:bot may not list schedulings in namespace team: no RBAC rule allows it (it takes a Role or ClusterRole granting the verb "list" on "schedulings" in the API group "slotplane.io", bound to the user or one of its groups)`, e.Message)
			}
		})
	}
}
