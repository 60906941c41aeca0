package api

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTokens(t *testing.T) {
	got, err := ParseTokens(strings.NewReader("# people\nt1,alice,analysts,ops\n\n t2 , bob\n"))
	require.NoError(t, err)
	require.Equal(t, StaticTokens{"t1": {Name: "alice", Groups: []string{"analysts", "ops"}}, "t2": {Name: "bob"}}, got)
	u, err := got.Authenticate(context.Background(), "t1")
	require.NoError(t, err)
	require.Equal(t, "alice", u.Name)
	_, err = got.Authenticate(context.Background(), "t3")
	require.ErrorIs(t, err, ErrUnknownToken)
	_, err = got.Authenticate(context.Background(), "")
	require.ErrorIs(t, err, ErrUnknownToken)

	for name, tc := range map[string]struct{ in, want string }{
		"no user":       {"t1,alice\nt2\n", "line 2: want token,user"},
		"empty user":    {"t1, \n", "line 1: want token,user"},
		"twice":         {"t1,alice\nt1,bob\n", "line 2: the token is listed twice"},
		"empty":         {"# nothing\n", "no tokens"},
		"broken quotes": {"t1,\"alice\n", "token file"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseTokens(strings.NewReader(tc.in))
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.Len(t, NewToken(), 64)
	require.NotEqual(t, NewToken(), NewToken())
}
