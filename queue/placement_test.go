package queue

import (
	"errors"
	"testing"
)

func TestPlace_TheSourceExamplePolicy(t *testing.T) {
	a, err := ParseAllocations([]byte(sourceExample))
	if err != nil {
		t.Fatal(err)
	}
	// specified; primaryGroup (create=false); nestedUserQueue(secondaryGroupExistingQueue
	// create=false); default queue=sample_queue.
	cases := map[string]struct {
		in      Submitter
		want    string
		created bool
		rule    string
	}{
		"the requested queue":            {Submitter{Queue: "sample_queue.sample_sub_queue", User: "u"}, "root.sample_queue.sample_sub_queue", false, "specified"},
		"requested with root prefix":     {Submitter{Queue: "root.adhoc", User: "u"}, "root.adhoc", true, "specified"},
		"no queue: primary group exists": {Submitter{User: "u", PrimaryGroup: "sample_queue"}, "", false, ""},
		"secondary group's user queue":   {Submitter{User: "first.last", PrimaryGroup: "nope", SecondaryGroups: []string{"x", "secondary_group_queue"}}, "root.secondary_group_queue.first_dot_last", true, "nestedUserQueue"},
		// The example's default rule names sample_queue, which has a child: a parent queue,
		// so what reaches that rule is refused (the Fair Scheduler refuses parent queues too).
		"nothing matches: default":   {Submitter{User: "u", PrimaryGroup: "nope"}, "", false, ""},
		"'default' means no request": {Submitter{Queue: "default", User: "u", PrimaryGroup: "nope"}, "", false, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := a.Place(tc.in)
			if tc.want == "" {
				// sample_queue is a parent: rejected.
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("got %+v, %v; want a rejection (parent queue)", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Queue != tc.want || got.Created != tc.created || got.Rule != tc.rule {
				t.Errorf("got %+v, want %s created=%v by %s", got, tc.want, tc.created, tc.rule)
			}
		})
	}
}

func TestPlace_Rules(t *testing.T) {
	file := func(policy string) *Allocations {
		a, err := ParseAllocations([]byte(`<allocations>
  <queue name="eng"><queue name="alice"/></queue>
  <queue name="ops"/>
  <queue name="teams" type="parent"/>
  <queuePlacementPolicy>` + policy + `</queuePlacementPolicy></allocations>`))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := map[string]struct {
		policy  string
		in      Submitter
		want    string
		wantErr bool
	}{
		"period at the start rejects":     {`<rule name="specified"/><rule name="default"/>`, Submitter{Queue: ".q1"}, "", true},
		"period at the end rejects":       {`<rule name="specified"/><rule name="default"/>`, Submitter{Queue: "q1."}, "", true},
		"user with periods":               {`<rule name="user"/>`, Submitter{User: "first.last"}, "root.first_dot_last", false},
		"user, existing only, continues":  {`<rule name="user" create="false"/><rule name="default" queue="ops"/>`, Submitter{User: "zed"}, "root.ops", false},
		"user, existing only, places":     {`<rule name="user" create="false"/><rule name="reject"/>`, Submitter{User: "ops"}, "root.ops", false},
		"primary group with periods":      {`<rule name="primaryGroup"/>`, Submitter{User: "u", PrimaryGroup: "one.two"}, "root.one_dot_two", false},
		"secondary: the first configured": {`<rule name="secondaryGroupExistingQueue"/><rule name="reject"/>`, Submitter{SecondaryGroups: []string{"none", "ops", "eng"}}, "root.ops", false},
		"secondary: none configured":      {`<rule name="secondaryGroupExistingQueue"/><rule name="reject"/>`, Submitter{SecondaryGroups: []string{"none"}}, "", true},
		"nested under a typed parent":     {`<rule name="nestedUserQueue"><rule name="default" queue="teams" create="false"/></rule><rule name="reject"/>`, Submitter{User: "bo.b"}, "root.teams.bo_dot_b", false},
		"nested under a leaf continues":   {`<rule name="nestedUserQueue"><rule name="default" queue="ops" create="false"/></rule><rule name="default" queue="ops"/>`, Submitter{User: "bob"}, "root.ops", false},
		"nested, existing only":           {`<rule name="nestedUserQueue" create="false"><rule name="default" queue="eng"/></rule><rule name="reject"/>`, Submitter{User: "alice"}, "root.eng.alice", false},
		"default without queue":           {`<rule name="default"/>`, Submitter{}, "root.default", false},
		"reject":                          {`<rule name="reject"/>`, Submitter{Queue: "ops"}, "", true},
		"specified parent is rejected":    {`<rule name="specified"/><rule name="default"/>`, Submitter{Queue: "eng"}, "", true},
		"specified under a leaf rejected": {`<rule name="specified"/><rule name="default"/>`, Submitter{Queue: "ops.sub"}, "", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := file(tc.policy).Place(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrRejected) {
					t.Fatalf("got %+v, %v; want a rejection", got, err)
				}
				return
			}
			if err != nil || got.Queue != tc.want {
				t.Fatalf("got %+v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestPlace_WithoutPolicyTakesTheRequestThenTheUserThenDefault(t *testing.T) {
	a, err := ParseAllocations([]byte(`<allocations/>`))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := a.Place(Submitter{Queue: "analytics", User: "ann"}); err != nil || p.Queue != "root.analytics" {
		t.Errorf("requested: %+v %v", p, err)
	}
	if p, err := a.Place(Submitter{User: "ann"}); err != nil || p.Queue != "root.ann" || !p.Created {
		t.Errorf("user: %+v %v", p, err)
	}
	if p, err := a.Place(Submitter{}); err != nil || p.Queue != "root.default" {
		t.Errorf("nobody: %+v %v", p, err)
	}
}

// A file without a placement policy places by the settings, as the Fair Scheduler does:
// the requested queue, then (user-as-default-queue) the user's queue, then root.default;
// without allow-undeclared-pools, a queue the file does not declare is not made, and the job
// goes on to root.default. A file with a policy places by it alone.
func TestPlace_WithoutPolicyFollowsTheSettings(t *testing.T) {
	const declared = `<allocations><queue name="etl"/><queue name="ann"/></allocations>`
	requested := Submitter{Queue: "adhoc", User: "bob"}
	cases := map[string]struct {
		file                 string
		userAsDefault, allow string
		s                    Submitter
		want                 Placement
	}{
		"defaults, requested":           {declared, "true", "true", requested, Placement{Queue: "root.adhoc", Created: true, Rule: "specified"}},
		"defaults, user":                {declared, "true", "true", Submitter{User: "bob"}, Placement{Queue: "root.bob", Created: true, Rule: "user"}},
		"defaults, nobody":              {declared, "true", "true", Submitter{}, Placement{Queue: "root.default", Created: true, Rule: "default"}},
		"no user queue":                 {declared, "false", "true", Submitter{User: "ann"}, Placement{Queue: "root.default", Created: true, Rule: "default"}},
		"no user queue, requested":      {declared, "false", "true", requested, Placement{Queue: "root.adhoc", Created: true, Rule: "specified"}},
		"undeclared requested":          {declared, "true", "false", requested, Placement{Queue: "root.default", Created: true, Rule: "default"}},
		"declared requested":            {declared, "true", "false", Submitter{Queue: "etl", User: "bob"}, Placement{Queue: "root.etl", Rule: "specified"}},
		"undeclared user queue":         {declared, "true", "false", Submitter{User: "bob"}, Placement{Queue: "root.default", Created: true, Rule: "default"}},
		"declared user queue":           {declared, "true", "false", Submitter{User: "ann"}, Placement{Queue: "root.ann", Rule: "user"}},
		"neither":                       {declared, "false", "false", Submitter{Queue: "etl", User: "ann"}, Placement{Queue: "root.etl", Rule: "specified"}},
		"declared default":              {`<allocations><queue name="default"/></allocations>`, "true", "false", Submitter{User: "bob"}, Placement{Queue: "root.default", Rule: "default"}},
		"a policy ignores the settings": {`<allocations><queuePlacementPolicy><rule name="user"/></queuePlacementPolicy></allocations>`, "false", "false", Submitter{User: "bob"}, Placement{Queue: "root.bob", Created: true, Rule: "user"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := parseConfig(t, tc.file, settingsFile(PropUserAsDefaultQueue, tc.userAsDefault, PropAllowUndeclaredPools, tc.allow))
			got, err := a.Place(tc.s)
			if err != nil || got != tc.want {
				t.Errorf("Place(%+v) = %+v, %v; want %+v", tc.s, got, err, tc.want)
			}
		})
	}
}
