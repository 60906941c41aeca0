package queue

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// A bad file is rejected with its reason and the last good configuration stays in force;
// the same version is not read twice; a good one after it takes over and clears the
// rejection; a removed file brings back the defaults.
func TestConfig_KeepsTheLastGoodFile(t *testing.T) {
	c := DefaultConfig()
	if c.Allocations == nil || c.Allocations.DefaultQueueSchedulingPolicy != PolicyFair {
		t.Fatalf("defaults %+v", c)
	}
	if u := ReadConfig(c, false, nil, ""); u != nil {
		t.Fatalf("no file while holding the defaults is no change: %+v", u)
	}
	load := func(c Config, data, version string) (Config, bool) {
		u := ReadConfig(c, true, []byte(data), version)
		if u == nil {
			return c, false
		}
		return c.Apply(*u), true
	}
	c, _ = load(c, `<allocations><queue name="a"/></allocations>`, "v1")
	if c.Version != "v1" || c.Allocations.Queue("a") == nil || c.Rejected != "" {
		t.Fatalf("v1: %+v", c)
	}
	if _, changed := load(c, "ignored: the same version", "v1"); changed {
		t.Fatal("the version in force was read again")
	}
	c, _ = load(c, "<allocations>\n<queue name=\"b\"><weight>two</weight></queue>\n</allocations>", "v2")
	if c.Version != "v1" || c.Allocations.Queue("a") == nil || c.RejectedVersion != "v2" || !strings.Contains(c.Rejected, "line 2") {
		t.Fatalf("v2 must be rejected and v1 kept: %+v", c)
	}
	if _, changed := load(c, "ignored: the same version", "v2"); changed {
		t.Fatal("the rejected version was read again")
	}
	c, _ = load(c, `<allocations><queue name="b"/></allocations>`, "v3")
	if c.Version != "v3" || c.Allocations.Queue("b") == nil || c.Rejected != "" || c.RejectedVersion != "" {
		t.Fatalf("v3: %+v", c)
	}
	u := ReadConfig(c, false, nil, "")
	if u == nil || !u.Missing {
		t.Fatalf("a removed file is a change: %+v", u)
	}
	if c = c.Apply(*u); c.Version != "" || c.Allocations.Queue("b") != nil {
		t.Fatalf("after removal: %+v", c)
	}
}

// A parsed file survives JSON (how Temporal carries it from the activity into the workflow
// and across continue-as-new) unchanged, for every example file.
func TestConfig_SurvivesJSON(t *testing.T) {
	for _, f := range []string{"../examples/fair-scheduler.xml", "../internal/samples/dev-queues.xml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := ReadConfig(Config{}, true, data, "v1")
		if u == nil || u.Allocations == nil {
			t.Fatalf("%s: %+v", f, u)
		}
		raw, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var back ConfigUpdate
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*u, back) {
			t.Fatalf("%s changed in JSON:\n%+v\n%+v", f, *u.Allocations, *back.Allocations)
		}
	}
}

// The allocation file and the settings are one configuration: a mistake in either rejects
// the pair and the last good pair stays in force, settings included; a new version of
// either is read; the settings alone make a configuration with the default file; neither
// is the defaults.
func TestConfig_KeepsTheLastGoodPair(t *testing.T) {
	load := func(c Config, f ConfigFiles, version string) (Config, bool) {
		u := ReadConfigFiles(c, f, version)
		if u == nil {
			return c, false
		}
		return c.Apply(*u), true
	}
	const file = `<allocations><queue name="a"/></allocations>`
	c, _ := load(DefaultConfig(), configFiles(file, preemptionOn), "v1")
	if c.Version != "v1" || c.Allocations.Queue("a") == nil || !c.Allocations.Preemption.Enabled {
		t.Fatalf("v1: %+v", c)
	}
	c, _ = load(c, configFiles(file, "<configuration>\n<property><name>"+PropPreemption+"</name><value>off</value></property>\n</configuration>"), "v2")
	if c.Version != "v1" || !c.Allocations.Preemption.Enabled || c.RejectedVersion != "v2" || !strings.Contains(c.Rejected, "yarn-site.xml line 2, property "+PropPreemption) {
		t.Fatalf("bad settings must be rejected and v1 kept: %+v", c)
	}
	if _, changed := load(c, configFiles("ignored: the same version", ""), "v2"); changed {
		t.Fatal("the rejected version was read again")
	}
	c, _ = load(c, configFiles("<allocations><preemption>true</preemption></allocations>", preemptionOn), "v3")
	if c.Version != "v1" || c.RejectedVersion != "v3" || !strings.Contains(c.Rejected, PropPreemption) {
		t.Fatalf("an old element must be rejected, naming its property: %+v", c)
	}
	c, _ = load(c, ConfigFiles{Settings: []byte(settingsFile(PropSizeBasedWeight, "true")), HasSettings: true}, "v4")
	if c.Version != "v4" || c.Allocations.Queue("a") != nil || !c.Allocations.SizeBasedWeight || c.Allocations.Preemption.Enabled || c.Rejected != "" {
		t.Fatalf("settings alone, with the default file: %+v", c)
	}
	u := ReadConfigFiles(c, ConfigFiles{}, "v5")
	if u == nil || !u.Missing {
		t.Fatalf("neither file is a change to the defaults: %+v", u)
	}
	if c = c.Apply(*u); c.Version != "" || c.Allocations.Settings != DefaultSettings() {
		t.Fatalf("after removal: %+v", c)
	}
}
