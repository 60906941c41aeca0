package localplatform

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/samples"
	"slotplane/queue"
)

// CreateDefaults creates, on the platform's first start, the test bed "bed" (2 slots of 2 CPUs
// and 8 GiB on every test bed node) and open queues, with their settings at the defaults. A marker in the state folder keeps a
// later start from bringing back what the user deleted.
func CreateDefaults(ctx context.Context, cl client.Client, stateDir, nodeLabel string) error {
	marker := filepath.Join(stateDir, "defaults-created")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	queues, err := samples.Files.ReadFile(samples.DevQueues)
	if err != nil {
		return err
	}
	settings, err := samples.Files.ReadFile(samples.DevSettings)
	if err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"},
			Data: map[string]string{v1alpha1.QueuesConfigMapKey: string(queues), queue.SettingsFile: string(settings)}},
		&v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default"},
			Spec: v1alpha1.TestBedSpec{NodeLabel: nodeLabel, SlotsPerNode: 2, ResourcesPerSlot: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}}},
	}
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the default %T %s: %w", o, o.GetName(), err)
		}
	}
	return os.WriteFile(marker, []byte("the default test bed and queues were created; delete this file to create them again\n"), 0o644)
}
