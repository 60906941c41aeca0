package render

import (
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/queue"
)

// Shares and usage print as YARN's UI prints memory, in whole MB rounded down, and vcores
// to two decimals rounded down: a third of 128 GiB is not float noise.
func TestShown_RoundsAsYARNPrints(t *testing.T) {
	for _, c := range []struct {
		r    queue.Resources
		want string
	}{
		{queue.Resources{MemoryBytes: (128 << 30) / 3, MilliCores: 16000 / 3}, "43690 mb, 5.33 vcores"},
		{queue.Resources{MemoryBytes: 19660<<20 + 838861, MilliCores: 9600}, "19660 mb, 9.6 vcores"},
		{queue.Resources{MemoryBytes: 8 << 30, MilliCores: 2000}, "8192 mb, 2 vcores"},
		{queue.Resources{MemoryBytes: 512 << 20, MilliCores: 250}, "512 mb, 0.25 vcores"},
		{queue.Resources{MilliCores: 5}, "0 mb, 0 vcores"},
		{queue.Resources{}, "0 mb, 0 vcores"},
	} {
		require.Equal(t, c.want, shown(c.r), "%+v", c.r)
	}
}
