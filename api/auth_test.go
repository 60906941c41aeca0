package api

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
)

func TestParseTokens(t *testing.T) {
	got, err := ParseTokens(strings.NewReader("# people\nt1,alice,analysts,ops\n\n t2 , bob\n"))
	require.NoError(t, err)
	all := &apitypes.TokenScope{Namespaces: []string{"*"}}
	require.Equal(t, StaticTokens{"t1": {Name: "alice", Groups: []string{"analysts", "ops"}, Scope: all}, "t2": {Name: "bob", Scope: all}}, got)
	u, err := got.Authenticate(context.Background(), "t1")
	require.NoError(t, err)
	require.Equal(t, "alice", u.Name)
	_, err = got.Authenticate(context.Background(), "t3")
	require.ErrorIs(t, err, ErrUnknownToken)
	_, err = got.Authenticate(context.Background(), "")
	require.ErrorIs(t, err, ErrUnknownToken)

	for name, tc := range map[string]struct{ in, want string }{
		"no user":           {"t1,alice\nt2\n", "line 2: want token,user"},
		"empty user":        {"t1, \n", "line 1: want token,user"},
		"twice":             {"t1,alice\nt1,bob\n", "line 2: the token is listed twice"},
		"empty":             {"# nothing\n", "no tokens"},
		"broken quotes":     {"t1,\"alice\n", "token file"},
		"an unknown option": {"t1,alice,can-do=everything\n", `line 1: unknown option "can-do"`},
		"a bad namespace":   {"t1,alice,namespaces=Team_A\n", "line 1: namespaces"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseTokens(strings.NewReader(tc.in))
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.Len(t, NewToken(), 64)
	require.NotEqual(t, NewToken(), NewToken())
}

// A token's line says what it may do: its namespaces, and whom it may act for. A plain token
// cannot submit as anyone else, so queue ACLs cannot be walked around with it.
func TestTokenScopes(t *testing.T) {
	tokens, err := ParseTokens(strings.NewReader(
		"plain,alice,analysts\n" +
			"team,bob,,namespaces=team-a team-b\n" +
			"scheduler,sched,namespaces=*,act-as=*,act-as-groups=analysts\n" +
			"narrow,helper,act-as=carol\n"))
	require.NoError(t, err)
	user := func(token string) apitypes.User {
		u, err := tokens.Authenticate(context.Background(), token)
		require.NoError(t, err)
		return u
	}
	job := func(ns string) Action {
		return Action{Group: "slotplane.io", Verb: "create", Resource: "batchjobs", Namespace: ns}
	}
	as := func(resource, name string) Action { return Action{Verb: "impersonate", Resource: resource, Name: name} }
	cases := map[string]struct {
		token string
		a     Action
		want  bool
	}{
		"plain, any namespace":              {"plain", job("team-z"), true},
		"plain, as another user":            {"plain", as("users", "carol"), false},
		"plain, as a group":                 {"plain", as("groups", "admins"), false},
		"plain, the core API":               {"plain", Action{Verb: "delete", Resource: "pods", Namespace: "team-z"}, false},
		"team, its namespace":               {"team", job("team-b"), true},
		"team, another namespace":           {"team", job("team-c"), false},
		"team, all namespaces at once":      {"team", Action{Group: "slotplane.io", Verb: "list", Resource: "batchjobs"}, false},
		"scheduler, as anyone":              {"scheduler", as("users", "carol"), true},
		"scheduler, as its group":           {"scheduler", as("groups", "analysts"), true},
		"scheduler, as another group":       {"scheduler", as("groups", "admins"), false},
		"scheduler, all namespaces at once": {"scheduler", Action{Group: "slotplane.io", Verb: "list", Resource: "batchjobs"}, true},
		"narrow, as the one user":           {"narrow", as("users", "carol"), true},
		"narrow, as another":                {"narrow", as("users", "dave"), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ok, reason, err := TokenScopes{}.Authorize(context.Background(), user(tc.token), tc.a)
			require.NoError(t, err)
			require.Equal(t, tc.want, ok, reason)
			if !ok && tc.a.Group+tc.a.Resource != "pods" {
				require.NotEmpty(t, reason, "a refusal says why")
			}
		})
	}
	ok, _, _ := TokenScopes{}.Authorize(context.Background(), apitypes.User{Name: "kube-user"}, job("x"))
	require.False(t, ok, "a user without a scope may do nothing")
}
