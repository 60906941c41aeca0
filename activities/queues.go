package activities

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

// AllocationFileRef names the ConfigMap key that holds a test bed's allocation file.
type AllocationFileRef struct {
	Namespace string
	ConfigMap string
	// Key defaults to fair-scheduler.xml.
	Key string
}

// DefaultAllocationFileKey is the ConfigMap key read when none is given.
const DefaultAllocationFileKey = v1alpha1.QueuesConfigMapKey

// AllocationFile is what ReadAllocationFile found: the file and the ConfigMap's
// resourceVersion, which changes with every edit.
type AllocationFile struct {
	Exists  bool
	Data    string
	Version string
}

// ReadAllocationFile reads the allocation file from its ConfigMap. A missing ConfigMap or
// key is not an error (Exists false: the defaults apply); the workflow parses the data.
func (a *Activities) ReadAllocationFile(ctx context.Context, in AllocationFileRef) (AllocationFile, error) {
	key := in.Key
	if key == "" {
		key = DefaultAllocationFileKey
	}
	var cm corev1.ConfigMap
	if err := a.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.ConfigMap}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return AllocationFile{}, nil
		}
		return AllocationFile{}, fmt.Errorf("get configmap %s/%s: %w", in.Namespace, in.ConfigMap, err)
	}
	data, ok := cm.Data[key]
	if !ok {
		return AllocationFile{Version: cm.ResourceVersion}, nil
	}
	return AllocationFile{Exists: true, Data: data, Version: cm.ResourceVersion}, nil
}
