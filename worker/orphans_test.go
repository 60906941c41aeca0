package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A worker's predecessor is another process on its host: the SDK's own identities (pid@host@)
// and slotplane's (pid@host@started) alike; another host, itself, or an identity without a
// host is not.
func TestPredecessor(t *testing.T) {
	self := identity(1, "worker-7f9c", time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC))
	require.Equal(t, "1@worker-7f9c@20261127T040000.000000", self)
	for other, want := range map[string]bool{
		identity(1, "worker-7f9c", time.Date(2026, 11, 27, 3, 59, 0, 0, time.UTC)): true, // the same pid, restarted
		"33@worker-7f9c@":                      true,  // an SDK identity from before Identity
		self:                                   false, // itself
		identity(1, "worker-b2d1", time.Now()): false, // another replica
		"":                                     false,
		"worker-7f9c":                          false,
		"1@worker-7f9c":                        false,
	} {
		require.Equal(t, want, predecessor(self, other), other)
	}
	require.False(t, predecessor("no-host", "1@x@"), "a self without a host has no predecessor")
	require.Equal(t, hostname(), hostOf(Identity), "this process's identity names its host")
}
