package localcluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ReadAudit counts by the User-Agent's product, verb, resource/subresource and failure
// code, leaves out watches and what came before since, and names the line it cannot read.
func TestReadAudit_CountsByComponentAndRefusesABadLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.log")
	lines := `{"verb":"create","userAgent":"slotplane-extender/devel (linux/amd64)","objectRef":{"resource":"pods","subresource":"binding"},"responseStatus":{"code":201},"stageTimestamp":"2026-11-28T01:00:01Z"}
{"verb":"create","userAgent":"slotplane-extender/devel (linux/amd64)","objectRef":{"resource":"pods","subresource":"binding"},"responseStatus":{"code":201},"stageTimestamp":"2026-11-28T01:00:02Z"}
{"verb":"delete","userAgent":"kwok-v0.7.0/v0.0.0","objectRef":{"resource":"pods"},"responseStatus":{"code":404},"stageTimestamp":"2026-11-28T01:00:03Z"}
{"verb":"watch","userAgent":"slotplane-worker/devel","objectRef":{"resource":"pods"},"responseStatus":{"code":200},"stageTimestamp":"2026-11-28T01:00:04Z"}
{"verb":"get","userAgent":"slotplane-worker/devel","objectRef":{"resource":"batchjobs"},"responseStatus":{"code":200},"stageTimestamp":"2026-11-28T00:59:59Z"}
{"verb":"get","userAgent":"kube-apiserver/v1.36.3","responseStatus":{"code":200},"stageTimestamp":"2026-11-28T01:00:05Z"}
`
	require.NoError(t, os.WriteFile(file, []byte(lines), 0o600))
	counts, err := ReadAudit(file, time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Equal(t, map[AuditKey]int{
		{Agent: "slotplane-extender", Verb: "create", Resource: "pods/binding"}: 2,
		{Agent: "kwok-v0.7.0", Verb: "delete", Resource: "pods", Code: 404}:     1,
		{Agent: "kube-apiserver", Verb: "get", Resource: "(no resource)"}:       1,
	}, counts)
	require.Equal(t, "kwok-v0.7.0 delete pods → 404", AuditKey{Agent: "kwok-v0.7.0", Verb: "delete", Resource: "pods", Code: 404}.String())

	require.NoError(t, os.WriteFile(file, []byte(lines+"{not json\n"), 0o600))
	_, err = ReadAudit(file, time.Time{})
	require.ErrorContains(t, err, "audit.log:7")
}
