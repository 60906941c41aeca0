package activities

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/queue"
)

// Kubernetes amounts reach the queues exactly, not rounded up to whole MiB and vcores.
func TestQueueResources_Exact(t *testing.T) {
	cases := map[string]struct {
		cpu, memory string
		want        queue.Resources
	}{
		"a small driver":   {"250m", "512Mi", queue.Resources{MemoryBytes: 512 << 20, MilliCores: 250}},
		"a slot":           {"1", "1Gi", queue.MBVCores(1024, 1)},
		"decimal units":    {"1.5", "100M", queue.Resources{MemoryBytes: 100_000_000, MilliCores: 1500}},
		"neither resource": {"", "", queue.Resources{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := corev1.ResourceList{}
			if tc.cpu != "" {
				l[corev1.ResourceCPU] = resource.MustParse(tc.cpu)
			}
			if tc.memory != "" {
				l[corev1.ResourceMemory] = resource.MustParse(tc.memory)
			}
			require.Equal(t, tc.want, QueueResources(l))
		})
	}
}

// A job that names no driver resources is admitted at the application builder's default.
func TestJobInfo_DriverSize(t *testing.T) {
	require.Equal(t, queue.MBVCores(1024, 1), JobInfo{}.DriverSize())
	small := JobInfo{Driver: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}
	require.Equal(t, queue.Resources{MilliCores: 250}, small.DriverSize())
}
