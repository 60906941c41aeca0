package queue

import (
	"errors"
	"testing"
)

// A bad file is rejected with its error and the last good configuration stays in force; a
// good one after it takes over and clears the rejection.
func TestConfig_KeepsTheLastGoodFile(t *testing.T) {
	c := DefaultConfig()
	if c.Allocations == nil || c.Allocations.DefaultQueueSchedulingPolicy != PolicyFair {
		t.Fatalf("defaults %+v", c)
	}
	c = c.Load([]byte(`<allocations><queue name="a"/></allocations>`), "v1")
	if c.Version != "v1" || c.Allocations.Queue("a") == nil || c.Rejected != nil {
		t.Fatalf("v1: %+v", c)
	}
	c = c.Load([]byte("<allocations>\n<queue name=\"b\"><wieght>2</wieght></queue>\n</allocations>"), "v2")
	var ce *ConfigError
	if c.Version != "v1" || c.Allocations.Queue("a") == nil || c.RejectedVersion != "v2" || !errors.As(c.Rejected, &ce) || ce.Line != 2 {
		t.Fatalf("v2 must be rejected and v1 kept: %+v", c)
	}
	again := c.Load([]byte("ignored: the same version"), "v2")
	if again.RejectedVersion != "v2" || again.Version != "v1" {
		t.Fatalf("reloading v2: %+v", again)
	}
	c = c.Load([]byte(`<allocations><queue name="b"/></allocations>`), "v3")
	if c.Version != "v3" || c.Allocations.Queue("b") == nil || c.Rejected != nil || c.RejectedVersion != "" {
		t.Fatalf("v3: %+v", c)
	}
}
