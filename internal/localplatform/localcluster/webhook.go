package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WebhookCerts are a serving pair for a webhook the local API server calls at 127.0.0.1,
// and the CA bundle to register it with: the same kind of credentials as the extender's,
// made for every start in their own directory under dir.
type WebhookCerts struct {
	CABundle          []byte
	Dir               string
	CertName, KeyName string
}

// NewWebhookCerts makes WebhookCerts under dir/name.
func NewWebhookCerts(dir, name string) (*WebhookCerts, error) {
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	c, err := NewExtenderCerts(d, "127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("webhook %s certificate: %w", name, err)
	}
	// Under the names a controller-runtime webhook server reads by default.
	w := &WebhookCerts{CABundle: c.CA, Dir: d, CertName: "tls.crt", KeyName: "tls.key"}
	if err := os.Rename(c.CertFile, filepath.Join(d, w.CertName)); err != nil {
		return nil, err
	}
	if err := os.Rename(c.KeyFile, filepath.Join(d, w.KeyName)); err != nil {
		return nil, err
	}
	return w, nil
}

// ClientConfig is the webhook at port and path on 127.0.0.1, with its CA bundle.
func (w *WebhookCerts) ClientConfig(port int, path string) admissionregv1.WebhookClientConfig {
	url := "https://127.0.0.1:" + strconv.Itoa(port) + path
	return admissionregv1.WebhookClientConfig{URL: &url, CABundle: w.CABundle}
}

// RegisterWebhook creates (or replaces) a ValidatingWebhookConfiguration.
func RegisterWebhook(ctx context.Context, cs kubernetes.Interface, conf *admissionregv1.ValidatingWebhookConfiguration) error {
	api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_, err := api.Create(ctx, conf, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		old, gerr := api.Get(ctx, conf.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		conf.ResourceVersion = old.ResourceVersion
		_, err = api.Update(ctx, conf, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("register webhook %s: %w", conf.Name, err)
	}
	return nil
}
