package localplatform

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/workflows"
)

// A kept state folder takes this build's workflow form while it has no Temporal database;
// one whose database was made by workflows of another form, or before the form was
// written, is refused with the way to start anew, and nothing in it changes.
func TestCheckHistoryForm_RefusesAnotherBuildsWorkflows(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, checkHistoryForm(dir))
	raw, err := os.ReadFile(filepath.Join(dir, historyFormFile))
	require.NoError(t, err)
	require.Equal(t, workflows.HistoryForm+"\n", string(raw))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "temporal.db"), []byte("a database"), 0o600))
	require.NoError(t, checkHistoryForm(dir), "the same form starts")

	require.NoError(t, os.WriteFile(filepath.Join(dir, historyFormFile), []byte("2026-01-01\n"), 0o600))
	err = checkHistoryForm(dir)
	require.ErrorIs(t, err, ErrOtherHistoryForm)
	require.ErrorContains(t, err, "form 2026-01-01")
	require.ErrorContains(t, err, "slotplane dev -reset")

	require.NoError(t, os.Remove(filepath.Join(dir, historyFormFile)))
	err = checkHistoryForm(dir)
	require.ErrorIs(t, err, ErrOtherHistoryForm)
	require.ErrorContains(t, err, "unknown")
	_, err = os.Stat(filepath.Join(dir, historyFormFile))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused folder is left as it was")
}
