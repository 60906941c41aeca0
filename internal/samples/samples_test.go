package samples

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/queue"
)

// The binary's copy of the two-team allocation file and its settings is the one users read
// in examples/.
func TestTwoTeams_AreTheExamples(t *testing.T) {
	for _, name := range []string{TwoTeams, TwoTeamsSettings} {
		want, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		require.NoError(t, err)
		got, err := Files.ReadFile(name)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "internal/samples/%s differs from examples/%s: copy it over", name, name)
	}
}

// The local platform's queues load with their settings, which spell out every default.
func TestDevQueues_SpellOutTheDefaults(t *testing.T) {
	queues, err := Files.ReadFile(DevQueues)
	require.NoError(t, err)
	settings, err := Files.ReadFile(DevSettings)
	require.NoError(t, err)
	dev, err := queue.ParseConfig(queue.ConfigFiles{Allocations: queues, HasAllocations: true, Settings: settings, HasSettings: true})
	require.NoError(t, err)
	require.Equal(t, queue.DefaultSettings(), dev.Settings)
	for _, p := range dev.Properties() {
		require.True(t, strings.Contains(string(settings), "<name>"+p.Name+"</name>"), "%s does not spell out %s", DevSettings, p.Name)
	}
}
