package localcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates (or updates) each CRD given as YAML and waits until all are
// established, so clients can use them at once.
func InstallCRDs(ctx context.Context, cfg *rest.Config, yamls [][]byte) error {
	cs, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crdClient := cs.ApiextensionsV1().CustomResourceDefinitions()
	var names []string
	for _, data := range yamls {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return fmt.Errorf("decode CRD: %w", err)
		}
		names = append(names, crd.Name)
		_, err := crdClient.Create(ctx, &crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			current, getErr := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
			if getErr != nil {
				return fmt.Errorf("get CRD %s: %w", crd.Name, getErr)
			}
			crd.ResourceVersion = current.ResourceVersion
			_, err = crdClient.Update(ctx, &crd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", crd.Name, err)
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := crdClient.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

// InstallPriorityClasses creates the PriorityClasses of deploy/priorityclasses.yaml; ones
// that exist are left alone (a PriorityClass's value cannot change).
func InstallPriorityClasses(ctx context.Context, cs kubernetes.Interface, manifest []byte) error {
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		var pc schedulingv1.PriorityClass
		if err := yaml.UnmarshalStrict([]byte(doc), &pc); err != nil {
			return fmt.Errorf("decode PriorityClass: %w", err)
		}
		_, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &pc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PriorityClass %s: %w", pc.Name, err)
		}
	}
	return nil
}
