package main

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Bad flags and environment fail at once, with a message naming the culprit, before any
// process is started.
func TestDev_RejectsBadInput(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	cases := map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"negative nodes":       {args: []string{"-nodes", "-1"}, want: "-nodes must not be negative"},
		"negative plain nodes": {args: []string{"-plain-nodes", "-2"}, want: "-plain-nodes must not be negative"},
		"env not a number":     {env: map[string]string{"SLOTPLANE_NODES": "four"}, want: `SLOTPLANE_NODES="four" is not a number`},
		"temporal port taken":  {args: []string{"-temporal-port", busyPort}, want: "-temporal-port " + busyPort + ": port is in use"},
		"ui port out of range": {args: []string{"-ui-port", "70000"}, want: "-ui-port 70000: not a TCP port"},
		"unknown flag":         {args: []string{"-colour"}, want: "flag provided but not defined: -colour"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"-state-dir", t.TempDir()}, tc.args...)
			err := runDev(context.Background(), args)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
