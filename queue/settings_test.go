package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// settingsFile is a yarn-site.xml of the given name and value pairs, one property a line
// from line 2.
func settingsFile(nameValues ...string) string {
	var b strings.Builder
	b.WriteString("<configuration>\n")
	for i := 0; i+1 < len(nameValues); i += 2 {
		fmt.Fprintf(&b, "<property><name>%s</name><value>%s</value></property>\n", nameValues[i], nameValues[i+1])
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

// preemptionOn is the settings that turn preemption on.
var preemptionOn = settingsFile(PropPreemption, "true")

// configFiles is an allocation file and its settings ("": none) as the ConfigMap holds them.
func configFiles(file, settings string) ConfigFiles {
	return ConfigFiles{Allocations: []byte(file), HasAllocations: true, Settings: []byte(settings), HasSettings: settings != ""}
}

// parseConfig parses an allocation file and its settings ("": the defaults).
func parseConfig(t testing.TB, file, settings string) *Allocations {
	t.Helper()
	a, err := ParseConfig(configFiles(file, settings))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Every property slotplane knows has a row: the ones it acts on set their setting (the rest
// stay at their defaults), the others are checked and listed as ignored with why. The rows
// are checked against the table the parser reads, so a property added without a row fails.
func TestParseSettings_EveryProperty(t *testing.T) {
	cases := map[string]struct {
		value string
		// set changes the defaults as the property should; nil for an ignored property.
		set     func(s *Settings)
		ignored string
	}{
		PropUserAsDefaultQueue:   {value: "false", set: func(s *Settings) { s.UserAsDefaultQueue = false }},
		PropAllowUndeclaredPools: {value: "FALSE", set: func(s *Settings) { s.AllowUndeclaredPools = false }},
		PropSizeBasedWeight:      {value: "true", set: func(s *Settings) { s.SizeBasedWeight = true }},
		PropUpdateInterval:       {value: " 250 ", set: func(s *Settings) { s.UpdateInterval = 250 * time.Millisecond }},
		PropPreemption:           {value: "True", set: func(s *Settings) { s.Preemption.Enabled = true }},

		PropMaxStartingApps:              {value: "0", set: func(s *Settings) { s.MaxStartingApps = 0 }},
		PropPreemptSlotBased:             {value: "true", set: func(s *Settings) { s.Preemption.SlotBased = true }},
		PropPreemptBelowFairShare:        {value: "true", set: func(s *Settings) { s.Preemption.BelowFairShare = true }},
		PropSkipStartingWithoutExecutors: {value: "false", set: func(s *Settings) { s.StateAware.SkipStartingWithoutExecutors = false }},
		PropSlotBackedDoNotHold:          {value: "true", set: func(s *Settings) { s.StateAware.SlotBackedDoNotHold = true }},

		"yarn.scheduler.fair.allocation.file":                   {value: "/etc/hadoop/fair-scheduler.xml", ignored: whyAllocationFile},
		PropPreemptionThreshold:                                 {value: "0.5f", ignored: whyUtilization},
		"yarn.scheduler.fair.event-log-enabled":                 {value: "false", ignored: whyEventLog},
		"yarn.scheduler.fair.assignmultiple":                    {value: "true", ignored: whyHeartbeats},
		"yarn.scheduler.fair.dynamic.max.assign":                {value: "false", ignored: whyHeartbeats},
		"yarn.scheduler.fair.max.assign":                        {value: "-1", ignored: whyHeartbeats},
		"yarn.scheduler.fair.locality.threshold.node":           {value: "-1.0", ignored: whyLocality},
		"yarn.scheduler.fair.locality.threshold.rack":           {value: "0.5f", ignored: whyLocality},
		"yarn.scheduler.fair.locality-delay-node-ms":            {value: "2000", ignored: whyLocality},
		"yarn.scheduler.fair.locality-delay-rack-ms":            {value: "4000", ignored: whyLocality},
		"yarn.scheduler.fair.continuous-scheduling-enabled":     {value: "true", ignored: whyContinuous},
		"yarn.scheduler.fair.continuous-scheduling-sleep-ms":    {value: "5", ignored: whyContinuous},
		"yarn.scheduler.fair.preemptionInterval":                {value: "5000", ignored: whyStarvationLoop},
		"yarn.scheduler.fair.waitTimeBeforeNextStarvationCheck": {value: "10000", ignored: whyStarvationLoop},
		"yarn.scheduler.fair.waitTimeBeforeKill":                {value: "15000", ignored: whyKillWait},
		"yarn.scheduler.fair.reservable-nodes":                  {value: "0.05", ignored: whyReservableNode},
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(properties)), slices.Sorted(maps.Keys(cases))); diff != "" {
		t.Fatalf("the rows are not the properties the parser knows (-parser +rows)\n%s", diff)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ignored, err := ParseSettings([]byte(settingsFile(name, tc.value)))
			if err != nil {
				t.Fatal(err)
			}
			want, wantIgnored := DefaultSettings(), []Ignored(nil)
			if tc.set != nil {
				tc.set(&want)
			} else {
				wantIgnored = []Ignored{{Line: 2, Property: name, Reason: tc.ignored}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("settings (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(wantIgnored, ignored); diff != "" {
				t.Errorf("ignored (-want +got)\n%s", diff)
			}
			if got == DefaultSettings() && tc.set != nil {
				t.Error("the row's value is the default: it cannot show the property acts")
			}
		})
	}
}

// Without a property, or without the file, every setting is the Fair Scheduler's default.
func TestParseSettings_Defaults(t *testing.T) {
	want := Settings{UserAsDefaultQueue: true, AllowUndeclaredPools: true, UpdateInterval: 500 * time.Millisecond,
		StateAware: StateAwareOptions{SkipStartingWithoutExecutors: true}, MaxStartingApps: 100}
	if diff := cmp.Diff(want, DefaultSettings()); diff != "" {
		t.Fatalf("defaults (-want +got)\n%s", diff)
	}
	for _, file := range []string{
		"<configuration/>",
		`<?xml version="1.0"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<!-- nothing set -->
<configuration>
</configuration>`,
	} {
		got, ignored, err := ParseSettings([]byte(file))
		if err != nil || got != want || ignored != nil {
			t.Errorf("%s: %+v, %v, %v", file, got, ignored, err)
		}
	}
	a, err := ParseConfig(ConfigFiles{})
	if err != nil || a.Settings != want {
		t.Errorf("no files at all: %+v, %v", a, err)
	}
}

// A whole yarn-site.xml of a YARN cluster loads: the properties of the rest of YARN, in all
// the forms Hadoop writes (descriptions, final, source, tag, attributes), are counted and
// left alone; the Fair Scheduler's and slotplane's are read.
func TestParseSettings_AWholeYarnSiteLoads(t *testing.T) {
	file := `<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <property>
    <name>yarn.resourcemanager.scheduler.class</name>
    <value>org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler</value>
    <description>The class to use as the resource scheduler, <b>not</b> a setting of ours.</description>
  </property>
  <property>
    <name>yarn.nodemanager.resource.memory-mb</name>
    <value>8192</value>
    <final>true</final>
    <source>yarn-site.xml</source>
    <tag>RESOURCEMANAGER</tag>
  </property>
  <property name="yarn.nodemanager.aux-services" value="spark_shuffle"/>
  <property>
    <name>yarn.scheduler.fair.preemption</name>
    <value>true</value>
    <final>true</final>
  </property>
  <property name="yarn.scheduler.fair.sizebasedweight" value="true"/>
  <property>
    <description>Property order inside the element does not matter.</description>
    <value>false</value>
    <name>
      yarn.scheduler.fair.assignmultiple
    </name>
  </property>
  <property><name>yarn.scheduler.increment-allocation-mb</name><value>512</value></property>
</configuration>`
	s, ignored, err := ParseSettings([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSettings()
	want.Preemption.Enabled, want.SizeBasedWeight, want.OtherProperties = true, true, 4
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("settings (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]Ignored{{Line: 22, Property: "yarn.scheduler.fair.assignmultiple", Reason: whyHeartbeats}}, ignored); diff != "" {
		t.Errorf("ignored (-want +got)\n%s", diff)
	}
}

// Each mistake in the settings is a ConfigError of the settings file naming the line and the
// property (or element), and the whole file is refused.
func TestParseSettings_ErrorsSayWhere(t *testing.T) {
	cases := map[string]struct {
		file              string
		line              int
		property, element string
		msg               string
	}{
		"bad switch":           {settingsFile(PropPreemption, "yes"), 2, PropPreemption, "property", `"yes" is neither true nor false`},
		"empty switch":         {settingsFile(PropSizeBasedWeight, ""), 2, PropSizeBasedWeight, "property", `"" is neither true nor false`},
		"threshold in percent": {settingsFile(PropPreemptionThreshold, "80"), 2, PropPreemptionThreshold, "property", "fraction in [0, 1]"},
		"threshold not number": {settingsFile(PropPreemptionThreshold, "high"), 2, PropPreemptionThreshold, "property", "fraction in [0, 1]"},
		"threshold NaN":        {settingsFile(PropPreemptionThreshold, "NaN"), 2, PropPreemptionThreshold, "property", "fraction in [0, 1]"},
		"interval zero":        {settingsFile(PropUpdateInterval, "0"), 2, PropUpdateInterval, "property", "from 1 to 600000"},
		"interval negative":    {settingsFile(PropUpdateInterval, "-500"), 2, PropUpdateInterval, "property", "from 1 to 600000"},
		"interval too long":    {settingsFile(PropUpdateInterval, "600001"), 2, PropUpdateInterval, "property", "from 1 to 600000"},
		"starting negative":    {settingsFile(PropMaxStartingApps, "-1"), 2, PropMaxStartingApps, "property", "whole number from 0 to 1000000"},
		"starting fraction":    {settingsFile(PropMaxStartingApps, "2.5"), 2, PropMaxStartingApps, "property", "whole number from 0 to 1000000"},
		"interval with a unit": {settingsFile(PropUpdateInterval, "500ms"), 2, PropUpdateInterval, "property", "whole number of milliseconds"},
		"ignored, bad flag":    {settingsFile("yarn.scheduler.fair.assignmultiple", "sometimes"), 2, "yarn.scheduler.fair.assignmultiple", "property", "neither true nor false"},
		"ignored, bad whole":   {settingsFile("yarn.scheduler.fair.max.assign", "1.5"), 2, "yarn.scheduler.fair.max.assign", "property", "not a whole number"},
		"ignored, bad number":  {settingsFile("yarn.scheduler.fair.locality.threshold.node", "near"), 2, "yarn.scheduler.fair.locality.threshold.node", "property", "not a number"},
		"ignored, empty path":  {settingsFile("yarn.scheduler.fair.allocation.file", " "), 2, "yarn.scheduler.fair.allocation.file", "property", "empty"},
		"misspelt fair":        {settingsFile("yarn.scheduler.fair.preemptoin", "true"), 2, "yarn.scheduler.fair.preemptoin", "property", "unknown property (a typo of a known one?); slotplane knows yarn.scheduler.fair.allocation.file, "},
		"misspelt slotplane":   {settingsFile("slotplane.preemption.slotbased", "true"), 2, "slotplane.preemption.slotbased", "property", "slotplane knows " + PropMaxStartingApps + ", " + PropPreemptBelowFairShare + ", " + PropPreemptSlotBased + ", " + PropSkipStartingWithoutExecutors + ", " + PropSlotBackedDoNotHold},
		"the old element name": {settingsFile("slotplane.preemptSlotBased", "true"), 2, "slotplane.preemptSlotBased", "property", "unknown property"},
		"set twice":            {settingsFile(PropPreemption, "true", "yarn.resourcemanager.address", "rm:8032", PropPreemption, "false"), 4, PropPreemption, "property", "set twice (first at line 2)"},
		"no name":              {"<configuration>\n<property><value>true</value></property>\n</configuration>", 2, "", "property", "needs a <name>"},
		"unknown in property":  {"<configuration>\n<property>\n<nmae>yarn.scheduler.fair.preemption</nmae></property>\n</configuration>", 3, "", "nmae", "unknown element in <property>"},
		"an include":           {"<configuration xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n<xi:include href=\"more.xml\"/>\n</configuration>", 2, "", "include", "includes are not followed"},
		"nested value":         {"<configuration>\n<property><name>" + PropPreemption + "</name><value><b>true</b></value></property>\n</configuration>", 2, "", "value", "cannot hold <b>"},
		"stray text":           {"<configuration>\nsomething</configuration>", 2, "", "", "outside of any value element"},
		"truncated":            {"<configuration>\n<property><name>x</name>", 2, "", "", "unexpected EOF"},
		"unclosed description": {"<configuration>\n<property><name>x</name><description>a <b>b</description></property>\n</configuration>", 2, "", "", "not well-formed XML"},
		"wrong root":           {"<allocations/>", 1, "", "allocations", "must be <configuration>"},
		"no root":              {"", 1, "", "", "no <configuration> element"},
		"too big":              {strings.Repeat(" ", maxFileSize+1), 1, "", "", "over"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, ignored, err := ParseSettings([]byte(tc.file))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v, want a ConfigError", err)
			}
			if ce.File != SettingsFile || ce.Line != tc.line || ce.Property != tc.property || ce.Element != tc.element || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("got %s line %d, property %q, <%s>: %q\nwant %s line %d, property %q, <%s>, containing %q",
					ce.File, ce.Line, ce.Property, ce.Element, ce.Msg, SettingsFile, tc.line, tc.property, tc.element, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("%s line %d", SettingsFile, tc.line)) {
				t.Errorf("the message %q does not start with the file and line", err)
			}
			if s != DefaultSettings() || ignored != nil {
				t.Errorf("a refused file still gave %+v, %v", s, ignored)
			}
		})
	}
}

// The elements slotplane once took in the allocation file for what are yarn-site properties
// are refused, each error naming the property that replaced it, which the settings take.
func TestParseAllocations_MovedElementsNameTheirProperty(t *testing.T) {
	want := []string{"preemptSlotBased", "preemption", "preemptionUtilizationThreshold",
		"stateAwareSkipStartingWithoutExecutors", "stateAwareSlotBackedDoNotHold"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(movedToSettings))); diff != "" {
		t.Errorf("the five elements (-want +got)\n%s", diff)
	}
	for element, prop := range movedToSettings {
		t.Run(element, func(t *testing.T) {
			_, err := ParseAllocations([]byte("<allocations>\n<queue name=\"a\"/>\n<" + element + ">true</" + element + ">\n</allocations>"))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Line != 3 || ce.Element != element || ce.File != "" {
				t.Fatalf("got %v, want an allocation file error at line 3, <%s>", err, element)
			}
			if !strings.Contains(err.Error(), "set the property "+prop+" in "+SettingsFile) {
				t.Errorf("%v does not say where the setting went", err)
			}
			if _, ok := properties[prop]; !ok {
				t.Errorf("%s is not a property the settings know", prop)
			}
		})
	}
}

// The settings in force, listed as properties, are every property slotplane acts on, and
// read back as a file they are the same settings.
func TestSettings_PropertiesReadBackTheSame(t *testing.T) {
	s := Settings{UserAsDefaultQueue: false, AllowUndeclaredPools: true, SizeBasedWeight: true, UpdateInterval: 1500 * time.Millisecond,
		Preemption: Preemption{Enabled: true, SlotBased: true}, StateAware: StateAwareOptions{SlotBackedDoNotHold: true}}
	var names, pairs []string
	for _, p := range s.Properties() {
		names = append(names, p.Name)
		pairs = append(pairs, p.Name, p.Value)
	}
	var acted []string
	for name, p := range properties {
		if p.ignored == "" {
			acted = append(acted, name)
		}
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(acted)), names); diff != "" {
		t.Errorf("listed properties (-acted on +listed)\n%s", diff)
	}
	back, _, err := ParseSettings([]byte(settingsFile(pairs...)))
	if err != nil || back != s {
		t.Errorf("read back: %+v, %v; want %+v", back, err, s)
	}
}

// The settings go into the configuration with the allocation file: the placement settings
// shape the placement of a file without a policy, sizebasedweight and the preemption and
// StateAware settings are the ones the Admitter reads, and the report shows them. Ignored
// properties follow the file's ignored elements.
func TestParseConfig_SettingsJoinTheFile(t *testing.T) {
	a := parseConfig(t, `<allocations><queue name="q"><reservation/></queue></allocations>`,
		settingsFile(PropPreemption, "true", "yarn.scheduler.fair.assignmultiple", "true", PropSlotBackedDoNotHold, "true"))
	if !a.Preemption.Enabled || !a.StateAware.SlotBackedDoNotHold {
		t.Errorf("settings in the configuration: %+v", a.Settings)
	}
	want := []string{"line 1, <reservation> of root.q: " + whyNoReservations, "yarn-site.xml line 3, yarn.scheduler.fair.assignmultiple: " + whyHeartbeats}
	var got []string
	for _, i := range a.Ignored {
		got = append(got, i.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ignored (-want +got)\n%s", diff)
	}
	r := admitterWithSettings(t, `<allocations><queue name="q"/></allocations>`, preemptionOn).Report(ReportOptions{})
	if !r.Settings.Preemption.Enabled || r.Settings.UpdateInterval != DefaultUpdateInterval {
		t.Errorf("the report's settings: %+v", r.Settings)
	}
	// A mistake in either file is the configuration's error.
	if _, err := ParseConfig(configFiles(`<allocations/>`, settingsFile(PropPreemption, "on"))); err == nil || !strings.HasPrefix(err.Error(), "yarn-site.xml line 2, property "+PropPreemption) {
		t.Errorf("bad settings: %v", err)
	}
	if _, err := ParseConfig(configFiles(`<allocations><queue name="a"><weight>x</weight></queue></allocations>`, preemptionOn)); err == nil || !strings.HasPrefix(err.Error(), "allocation file line 1, <weight>") {
		t.Errorf("bad file: %v", err)
	}
}

// Allocations whose encoding lacks some of the settings (as a recorded workflow history, or
// the state a running workflow carries, may) decode with the missing settings at their
// defaults; what the encoding does carry (preemption, StateAware) decodes as it was.
func TestAllocations_JSONFromBeforeTheSettingsTakesTheirDefaults(t *testing.T) {
	old := `{"Root":{"Name":"root","Path":"root","Weight":1,"Line":1},"UserMaxApps":{},"QueueMaxAMShareDefault":0.5,
	  "DefaultQueueSchedulingPolicy":"fair","Placement":null,
	  "Preemption":{"Enabled":true,"SlotBased":false},
	  "StateAware":{"SkipStartingWithoutExecutors":false,"SlotBackedDoNotHold":true},"Ignored":null}`
	var a Allocations
	if err := json.Unmarshal([]byte(old), &a); err != nil {
		t.Fatal(err)
	}
	want := DefaultSettings()
	want.Preemption = Preemption{Enabled: true}
	want.StateAware = StateAwareOptions{SlotBackedDoNotHold: true} // as encoded, though not the default
	if diff := cmp.Diff(want, a.Settings); diff != "" {
		t.Errorf("settings (-want +got)\n%s", diff)
	}
	if p, err := a.Place(Submitter{User: "ann"}); err != nil || p.Queue != "root.ann" {
		t.Errorf("placement as before the settings: %+v, %v", p, err)
	}
	// What is encoded now reads back the same, the settings included.
	a.SizeBasedWeight, a.UserAsDefaultQueue, a.UpdateInterval = true, false, time.Second
	raw, err := json.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	var back Allocations
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.Settings, back.Settings); diff != "" {
		t.Errorf("round trip (-sent +read)\n%s", diff)
	}
	if !strings.Contains(string(raw), `"Preemption":{"Enabled":true`) {
		t.Errorf("preemption is no longer where recorded histories have it: %s", raw)
	}
}

// sizebasedweight weighs each application of a fair or drf leaf by log2(1 + demand in MB):
// of two running applications that ask for more, the one with the least usage over its
// weight goes first. Unweighted, the one with less usage does. Waiting applications hold
// nothing, so they are first come, first served either way; fifo ignores weights.
func TestChoose_SizeBasedWeightOrdersTheLeaf(t *testing.T) {
	if w := (Settings{SizeBasedWeight: true}).AppWeight(MBVCores(1023, 0)); math.Abs(w-10) > 1e-9 {
		t.Fatalf("weight of 1023 mb = %v, want log2(1024) = 10", w)
	}
	if w := (Settings{}).AppWeight(MBVCores(1023, 0)); w != 1 {
		t.Fatalf("unweighted: %v", w)
	}
	// small: 1024 mb used, 1024 mb demand, weight about 10: 102.4 mb per unit of weight.
	// big: 2048 mb used, 2^24 mb demand, weight about 24: 85.3.
	apps := []App{
		{ID: "small", Queue: "root.q", Order: 1, Running: true, Pending: true, Usage: MBVCores(1024, 1), Demand: MBVCores(1024, 1), Ask: MBVCores(1024, 1)},
		{ID: "big", Queue: "root.q", Order: 2, Running: true, Pending: true, Usage: MBVCores(2048, 2), Demand: MBVCores(1<<24, 2), Ask: MBVCores(1024, 1)},
	}
	waiting := []App{
		{ID: "early", Queue: "root.q", Order: 3, Demand: MBVCores(1024, 1)},
		{ID: "late", Queue: "root.q", Order: 4, Demand: MBVCores(1<<20, 1)},
	}
	total := MBVCores(1<<25, 64)
	cases := map[string]struct {
		policy   Policy
		sized    bool
		apps     []App
		wantNext string
	}{
		"fair, unweighted":        {PolicyFair, false, apps, "small"},
		"fair, size-based":        {PolicyFair, true, apps, "big"},
		"drf, unweighted":         {PolicyDRF, false, apps, "small"},
		"drf, size-based":         {PolicyDRF, true, apps, "big"},
		"fifo, size-based":        {PolicyFIFO, true, apps, "small"},
		"waiting, size-based":     {PolicyFair, true, waiting, "early"},
		"waiting and running":     {PolicyFair, true, append(slices.Clone(apps), waiting...), "early"},
		"waiting, unweighted too": {PolicyFair, false, waiting, "early"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := parseConfig(t, fmt.Sprintf(`<allocations><queue name="q"><schedulingPolicy>%s</schedulingPolicy></queue></allocations>`, tc.policy),
				settingsFile(PropSizeBasedWeight, fmt.Sprint(tc.sized)))
			got, _, ok := NewTree(a).Next(Cluster{Total: total, Apps: tc.apps})
			if !ok || got.ID != tc.wantNext {
				t.Errorf("next: %q (%t), want %q", got.ID, ok, tc.wantNext)
			}
		})
	}
}

func FuzzParseSettings(f *testing.F) {
	f.Add([]byte(preemptionOn))
	f.Add([]byte(settingsFile(PropUpdateInterval, "750", PropPreemptionThreshold, "0.9f", "yarn.scheduler.fair.max.assign", "-1", "yarn.nodemanager.vmem-check-enabled", "false")))
	f.Add([]byte(`<configuration><property name="slotplane.stateaware.slot-backed-do-not-hold" value="true"/><property><description>x</description><name>a</name></property></configuration>`))
	f.Add([]byte("<configuration><property><name>"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ignored, err := ParseSettings(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.File != SettingsFile || ce.Line < 1 {
				t.Fatalf("error %v is not a ConfigError of the settings with a line", err)
			}
			if s != DefaultSettings() || ignored != nil {
				t.Fatalf("a refused file gave settings %+v, %v", s, ignored)
			}
			return
		}
		if s.UpdateInterval < time.Millisecond || s.UpdateInterval > MaxUpdateInterval || s.OtherProperties < 0 {
			t.Fatalf("settings out of their bounds: %+v", s)
		}
		for _, i := range ignored {
			if p, ok := properties[i.Property]; !ok || p.ignored != i.Reason || i.Line < 1 {
				t.Fatalf("ignored %+v is not a known ignored property", i)
			}
		}
		// The settings in force, written out as properties, read back the same.
		var pairs []string
		for _, p := range s.Properties() {
			pairs = append(pairs, p.Name, p.Value)
		}
		back, _, err := ParseSettings([]byte(settingsFile(pairs...)))
		s.OtherProperties = 0
		if err != nil || back != s {
			t.Fatalf("%+v read back as %+v, %v", s, back, err)
		}
	})
}
