package activities

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChangesCopying is a hub whose copies of kinds are what r answers, synced from the start:
// a copy that lags as far behind the API server as a test makes it.
func ChangesCopying(r client.Reader, kinds ...schema.GroupVersionKind) *Changes {
	c := NewChanges()
	c.copies, c.synced = r, map[schema.GroupVersionKind]func() bool{}
	for _, k := range kinds {
		c.synced[k] = func() bool { return true }
	}
	return c
}
