package activities_test

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// grantedAt is a creation request's moment of grant: now.
func grantedAt() *metav1.MicroTime {
	at := metav1.NewMicroTime(time.Now())
	return &at
}
