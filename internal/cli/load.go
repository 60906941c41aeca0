package cli

import (
	"context"
	"fmt"
	"io"

	"slotplane/internal/cli/render"
	"slotplane/internal/loadgen"
)

// Load drives a running API with a mix of reads and BatchJob creations for o.Duration and
// prints each kind's latency percentiles; any failed request makes it fail. The jobs it
// creates are left for the caller to delete; their names' common start is printed.
func Load(ctx context.Context, o loadgen.Options, out io.Writer) error {
	r, err := loadgen.Run(ctx, o)
	if err != nil {
		return err
	}
	render.Load(out, r)
	if n := r.Errors(); n > 0 {
		return fmt.Errorf("%d of %d requests failed", n, r.All.Count)
	}
	return nil
}
