//go:build integration

package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/api"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
)

// TokenReview and SubjectAccessReview against a real API server (RBAC, service account
// tokens): a service account's token names it and its groups, a garbage token is unknown,
// and what the account may do follows its RoleBindings, directly and through the HTTP API.
func TestKubeAuth_ServiceAccountAndRBAC(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := c.Client()
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)

	const ns, other, sa = "kubeauth", "kubeauth-other", "scheduler-bot"
	for _, name := range []string{ns, other} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	account, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}, metav1.CreateOptions{})
	require.NoError(t, err)
	token := tr.Status.Token
	require.NotEmpty(t, token)

	// Without caches, so that every check below sees the cluster as it is now.
	tokens := &api.KubeTokens{Client: cl, TTL: -1}
	access := &api.KubeAccess{Client: cl, AllowedTTL: -1, DeniedTTL: -1}
	// With a long cache for denials, to show it hides a new RoleBinding until it expires.
	cachedAccess := &api.KubeAccess{Client: cl, DeniedTTL: time.Hour}

	var user apitypes.User
	t.Run("authenticate", func(t *testing.T) {
		user, err = tokens.Authenticate(ctx, token)
		require.NoError(t, err)
		require.Equal(t, "system:serviceaccount:"+ns+":"+sa, user.Name)
		require.Equal(t, string(account.UID), user.UID)
		require.Subset(t, user.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"})

		_, err := tokens.Authenticate(ctx, "garbage")
		require.ErrorIs(t, err, api.ErrUnknownToken)
		_, err = tokens.Authenticate(ctx, token+"x")
		require.ErrorIs(t, err, api.ErrUnknownToken, "a token with a broken signature")
		_, err = (&api.KubeTokens{Client: cl, Audiences: []string{"somebody-else"}}).Authenticate(ctx, token)
		require.ErrorIs(t, err, api.ErrUnknownToken, "a token not issued for the audience asked for")
	})
	require.NotEmpty(t, user.Name, "authentication failed; the rest needs the user")

	h, err := api.New(api.Options{Client: cl, Temporal: lazyTemporal(t), Namespace: ns, Auth: tokens, Authorizer: access})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	base := srv.URL + "/api/v1"
	bearer := "Bearer " + token

	list := api.Action{Group: v1alpha1.GroupName, Verb: "list", Resource: "schedulings", Namespace: ns}
	create := api.Action{Group: v1alpha1.GroupName, Verb: "create", Resource: "schedulings", Namespace: ns}
	listOther := api.Action{Group: v1alpha1.GroupName, Verb: "list", Resource: "schedulings", Namespace: other}

	t.Run("denied without RBAC", func(t *testing.T) {
		for _, z := range []*api.KubeAccess{access, cachedAccess} {
			ok, reason, err := z.Authorize(ctx, user, list)
			require.NoError(t, err)
			require.False(t, ok)
			require.Contains(t, reason, "no RBAC rule allows it")
		}
		hc := client{t: t, base: base}
		var e apitypes.Error
		require.Equal(t, http.StatusForbidden, hc.do("GET", "/schedulings", bearer, nil, &e))
		require.Equal(t, apitypes.CodeForbidden, e.Code)
		require.Contains(t, e.Message, "may not list schedulings in namespace "+ns)
		require.Equal(t, http.StatusUnauthorized, hc.do("GET", "/schedulings", "Bearer garbage", nil, &e))
		require.Equal(t, apitypes.CodeUnauthorized, e.Code)
	})

	_, err = cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "schedulings-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"slotplane.io"}, Resources: []string{"schedulings"}, Verbs: []string{"list"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduler-bot-reads"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "schedulings-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	t.Run("allowed by the RoleBinding", func(t *testing.T) {
		// The API server's RBAC reads roles through its informers: the binding takes effect
		// a moment after it is created.
		require.Eventually(t, func() bool {
			ok, _, err := access.Authorize(ctx, user, list)
			return err == nil && ok
		}, 10*time.Second, 50*time.Millisecond)

		ok, _, err := cachedAccess.Authorize(ctx, user, list)
		require.NoError(t, err)
		require.False(t, ok, "the cached denial still stands")

		for _, a := range []api.Action{create, listOther, {Group: v1alpha1.GroupName, Verb: "list", Resource: "batchjobs", Namespace: ns}} {
			ok, reason, err := access.Authorize(ctx, user, a)
			require.NoError(t, err)
			require.False(t, ok, a.String())
			require.Contains(t, reason, "no RBAC rule allows it", a.String())
		}

		hc := client{t: t, base: base}
		var body struct {
			Items []apitypes.Scheduling `json:"items"`
		}
		require.Equal(t, http.StatusOK, hc.do("GET", "/schedulings", bearer, nil, &body))
		require.Empty(t, body.Items)

		var e apitypes.Error
		require.Equal(t, http.StatusForbidden, hc.do("GET", "/schedulings?namespace="+other, bearer, nil, &e))
		require.Equal(t, apitypes.CodeForbidden, e.Code)
		require.Equal(t, http.StatusForbidden, hc.do("POST", "/schedulings", bearer, `{"name":"x"}`, &e), "list does not allow create")
		require.Equal(t, apitypes.CodeForbidden, e.Code)
		require.Contains(t, e.Message, "may not create schedulings")
		require.Equal(t, http.StatusForbidden, hc.do("GET", "/jobs", bearer, nil, &e))
		require.Contains(t, e.Message, "may not list batchjobs")
		require.Equal(t, http.StatusUnauthorized, hc.do("GET", "/schedulings", "Bearer garbage", nil, &e))
		require.Equal(t, apitypes.CodeUnauthorized, e.Code)
	})
}

// lazyTemporal is a Temporal client that never connects: the routes these tests call do
// not use Temporal.
func lazyTemporal(t *testing.T) temporal.Client {
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	return tc
}
