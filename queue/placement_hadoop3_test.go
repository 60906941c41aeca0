package queue

import (
	"errors"
	"strings"
	"testing"
)

// policyFile is an allocation file with three configured queues and the placement policy
// given.
func policyFile(policy string) string {
	return `<allocations>
<queue name="eng" type="parent"><queue name="alice"/></queue>
<queue name="ops"/>
<queue name="teams" type="parent"/>
<queuePlacementPolicy>` + policy + `</queuePlacementPolicy>
</allocations>`
}

// What Hadoop 3 refuses in a placement policy, slotplane refuses, naming the line.
func TestParseAllocations_PlacementPoliciesHadoopRefuses(t *testing.T) {
	for name, c := range map[string]struct{ policy, msg string }{
		"empty":                       {``, "an empty placement policy"},
		"a rule without a name":       {`<rule/><rule name="default"/>`, "a rule needs a name"},
		"an unknown rule":             {`<rule name="random"/>`, `unknown rule "random"`},
		"nestedUserQueue alone":       {`<rule name="nestedUserQueue"/><rule name="reject"/>`, "needs a parent rule"},
		"reject as a parent":          {`<rule name="nestedUserQueue"><rule name="reject"/></rule><rule name="reject"/>`, "the reject rule cannot be a parent rule"},
		"nestedUserQueue as a parent": {`<rule name="user"><rule name="nestedUserQueue"><rule name="default"/></rule></rule><rule name="reject"/>`, "cannot be a parent rule"},
		"user under nestedUserQueue":  {`<rule name="nestedUserQueue"><rule name="user"/></rule><rule name="reject"/>`, "cannot be of its own kind"},
		"primaryGroup under itself":   {`<rule name="primaryGroup"><rule name="primaryGroup"/></rule><rule name="reject"/>`, "cannot be of its own kind"},
		"a parent on default":         {`<rule name="default"><rule name="primaryGroup"/></rule>`, "the default rule takes no parent rule"},
		"a parent on specified":       {`<rule name="specified"><rule name="primaryGroup"/></rule><rule name="reject"/>`, "the specified rule takes no parent rule"},
		// YARN-8967: a nestedUserQueue whose parent rule creates its queue places every job,
		// so what follows it is never reached. Hadoop 2 took it.
		"a rule after one that creates": {`<rule name="specified"/>
<rule name="nestedUserQueue"><rule name="default" queue="users"/></rule>
<rule name="default"/>`, "rule 3 (default) can never be reached: rule 2 (nestedUserQueue, create=true)"},
		// In Hadoop 3 a default rule that may not create passes a job on.
		"default that may not create, last": {`<rule name="default" create="false"/>`, "may pass an application on"},
		// A rule whose parent rule is of a kind that passes jobs on passes them on too,
		// though both may create.
		"user over specified, last": {`<rule name="user"><rule name="specified"/></rule>`, "may pass an application on"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseAllocations([]byte(policyFile(c.policy)))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Element == "" || ce.Line < 5 || !strings.Contains(ce.Msg, c.msg) {
				t.Fatalf("got %v; want a mistake at a line of the policy saying %q", err, c.msg)
			}
		})
	}
}

// What Hadoop 3 reads past in a placement policy, slotplane loads, and lists what it reads
// past; the policy places as it reads.
func TestParseAllocations_PlacementPoliciesHadoopLoads(t *testing.T) {
	for name, c := range map[string]struct {
		policy  string
		ignored string // "": nothing listed
		in      Submitter
		want    string // the queue placed in
	}{
		"an element that is no rule": {`<rule name="specified" create="false"/><note>ops only</note><rule name="default" queue="ops"/>`,
			"<note>: not a <rule>", Submitter{User: "u"}, "root.ops"},
		"the rule tag in capitals": {`<Rule name="default" queue="ops"/>`, "", Submitter{User: "u"}, "root.ops"},
		"create neither true nor false": {`<rule name="user" create="yes"/><rule name="default" queue="ops"/>`,
			`create="yes" on the user rule is neither true nor false: read as false`, Submitter{User: "nobody"}, "root.ops"},
		"create empty is true": {`<rule name="user" create=""/>`, "", Submitter{User: "zed"}, "root.zed"},
		"a queue on primaryGroup": {`<rule name="primaryGroup" create="false" queue="teams"/><rule name="default" queue="ops"/>`,
			`queue="teams" on the primaryGroup rule: only the default rule reads a queue`, Submitter{User: "u", PrimaryGroup: "ops"}, "root.ops"},
		"a default queue that is no name": {`<rule name="default" queue="ops."/>`,
			`queue="ops." on the default rule is not a queue name: the rule places in root.default`, Submitter{User: "u"}, "root.default"},
		"no rule at all": {"\n  <!-- placement as the settings say -->\n", "holds no <rule>", Submitter{Queue: "ops", User: "u"}, "root.ops"},
		"two parent rules, the last used": {`<rule name="nestedUserQueue"><rule name="bogus"/><rule name="default" queue="teams" create="false"/></rule><rule name="reject"/>`,
			"more than one parent rule: the last one is used", Submitter{User: "bo"}, "root.teams.bo"},
		"user with a parent rule": {`<rule name="user" create="true"><rule name="default" queue="eng" create="false"/></rule><rule name="reject"/>`,
			"", Submitter{User: "carol"}, "root.eng.carol"},
		"primaryGroup with a parent rule": {`<rule name="primaryGroup"><rule name="default" queue="teams" create="false"/></rule><rule name="reject"/>`,
			"", Submitter{User: "u", PrimaryGroup: "data.sci"}, "root.teams.data_dot_sci"},
		"secondaryGroupExistingQueue with a parent rule": {`<rule name="secondaryGroupExistingQueue"><rule name="default" queue="eng" create="false"/></rule><rule name="reject"/>`,
			"", Submitter{User: "u", SecondaryGroups: []string{"x", "alice"}}, "root.eng.alice"},
		"a parent rule that makes its queue": {`<rule name="nestedUserQueue" create="true"><rule name="default" queue="labs"/></rule>`,
			"", Submitter{User: "dan"}, "root.labs.dan"},
		"nestedUserQueue over secondaryGroupExistingQueue, then default": {`<rule name="nestedUserQueue"><rule name="secondaryGroupExistingQueue"/></rule><rule name="default" queue="ops"/>`,
			"", Submitter{User: "dan", SecondaryGroups: []string{"nope"}}, "root.ops"},
		"a nestedUserQueue that may create under one that may not": {`<rule name="nestedUserQueue"><rule name="default" queue="users" create="false"/></rule><rule name="default" queue="ops"/>`,
			"", Submitter{User: "dan"}, "root.ops"},
	} {
		t.Run(name, func(t *testing.T) {
			a, err := ParseAllocations([]byte(policyFile(c.policy)))
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, i := range a.Ignored {
				listed = append(listed, i.String())
			}
			if got := strings.Join(listed, "\n"); c.ignored == "" && got != "" || !strings.Contains(got, c.ignored) {
				t.Errorf("listed %q; want %q", got, c.ignored)
			}
			p, err := a.Place(c.in)
			if err != nil || p.Queue != c.want {
				t.Errorf("placed %+v, %v; want %s", p, err, c.want)
			}
		})
	}
}

// A file in the shape of the ones Hadoop's Fair-to-Capacity converter is tested with (a
// typed parent of user queues, maxChildResources, maxContainerAllocation, a reservation,
// weights of 0, maxAMShare -1, ACLs with trailing spaces, and a policy of nested rules
// whose parent rules carry queue attributes) loads, with what it reads past listed.
func TestParseAllocations_AConverterStyleFileLoads(t *testing.T) {
	a, err := ParseAllocations([]byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<allocations>
  <queue name="root">
    <schedulingPolicy>drf</schedulingPolicy>
    <aclSubmitApps>ana,ben platform</aclSubmitApps>
    <queue name="default"><weight>1.0</weight></queue>
    <queue name="people" type="parent">
      <queue name="ana">
        <minResources>memory-mb=2048, vcores=1</minResources>
        <aclSubmitApps>*</aclSubmitApps>
        <maxContainerAllocation>vcores=2,memory-mb=4096</maxContainerAllocation>
      </queue>
      <queue name="ben">
        <maxResources>memory-mb=40.0%, vcores=40.0%</maxResources>
        <minResources>memory-mb=2048, vcores=1</minResources>
        <weight>2.0</weight>
        <allowPreemptionFrom>false</allowPreemptionFrom>
        <aclSubmitApps>ben </aclSubmitApps>
        <maxAMShare>0.2</maxAMShare>
      </queue>
    </queue>
    <queue name="leads" type="parent">
      <maxChildResources>memory-mb=4096, vcores=1</maxChildResources>
      <queue name="cy">
        <maxResources>memory-mb=8192, vcores=2</maxResources>
        <maxRunningApps>3</maxRunningApps>
        <maxAMShare>-1.0</maxAMShare>
        <reservation>memory-mb=8192, vcores=2</reservation>
      </queue>
    </queue>
    <queue name="spare" type="parent">
      <weight>0</weight>
      <queue name="x"><weight>0</weight></queue>
    </queue>
  </queue>
  <userMaxAppsDefault>8</userMaxAppsDefault>
  <queueMaxAppsDefault>12</queueMaxAppsDefault>
  <defaultQueueSchedulingPolicy>fair</defaultQueueSchedulingPolicy>
  <queuePlacementPolicy>
    <rule name="nestedUserQueue" create="false">
      <rule name="default" create="false" queue="leads"/>
    </rule>
    <rule name="nestedUserQueue" create="false">
      <rule name="primaryGroup" create="false" queue="people.devs"/>
    </rule>
    <rule name="specified" create="true"/>
    <rule name="nestedUserQueue" create="true">
      <rule name="default" create="false" queue="people"/>
    </rule>
    <rule name="default"/>
  </queuePlacementPolicy>
</allocations>`))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, i := range a.Ignored {
		listed = append(listed, i.String())
	}
	got := strings.Join(listed, "\n")
	for _, want := range []string{
		"<maxContainerAllocation> of root.people.ana: " + whyNoContainers,
		"<reservation> of root.leads.cy: " + whyNoReservations,
		`queue="people.devs" on the primaryGroup rule: only the default rule reads a queue`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("listed:\n%s\nwant a line with %q", got, want)
		}
	}
	for _, c := range []struct {
		in   Submitter
		want string
	}{
		{Submitter{User: "cy"}, "root.leads.cy"},                            // the first rule: an existing user queue under leads
		{Submitter{User: "ana", PrimaryGroup: "people"}, "root.people.ana"}, // the second: under the group's queue
		{Submitter{User: "dee", Queue: "spare.x"}, "root.spare.x"},
		{Submitter{User: "eve"}, "root.people.eve"}, // a new user queue under people
	} {
		if p, err := a.Place(c.in); err != nil || p.Queue != c.want {
			t.Errorf("%+v placed %+v, %v; want %s", c.in, p, err, c.want)
		}
	}
}

// A queue whose minResources exceed its maxResources loads with a warning, as in the Fair
// Scheduler, and its minimum share is capped at its maximum.
func TestParseAllocations_MinOverMaxIsCapped(t *testing.T) {
	a, err := ParseAllocations([]byte("<allocations>\n<queue name=\"a\"><minResources>4096 mb, 1 vcores</minResources><maxResources>2048 mb, 2 vcores</maxResources></queue>\n</allocations>"))
	if err != nil {
		t.Fatal(err)
	}
	if got := *a.Queue("a").MinResources; got != MBVCores(2048, 1) {
		t.Errorf("minResources %v", got)
	}
	if len(a.Ignored) != 1 || !strings.Contains(a.Ignored[0].String(), "line 2, <minResources> of root.a: minResources 4096 mb, 1 vcores exceed maxResources 2048 mb, 2 vcores") {
		t.Errorf("listed %v", a.Ignored)
	}
}
