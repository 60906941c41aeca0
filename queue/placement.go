package queue

import (
	"errors"
	"fmt"
	"strings"
)

// Submitter is who submits an application and where it asked to go.
type Submitter struct {
	// Queue is the queue the application asked for ("" or "default": none).
	Queue           string
	User            string
	PrimaryGroup    string
	SecondaryGroups []string
}

// Placement is where the placement policy put an application.
type Placement struct {
	// Queue is the full path of a leaf queue (root.a.b).
	Queue string
	// Created: the allocation file does not configure the queue; a rule with create made it.
	Created bool
	// Rule is the rule that placed it.
	Rule string
}

// ErrRejected: the placement policy refused the application.
var ErrRejected = errors.New("the queue placement policy rejected the application")

// DefaultPlacement is the policy of a file without queuePlacementPolicy, made of the
// settings as the Fair Scheduler makes it: the requested queue; then, with
// UserAsDefaultQueue, a queue named after the user; then root.default. Both rules before it
// may create a queue only with AllowUndeclaredPools, so without it a job headed for a queue
// the file does not declare passes on to root.default. The Fair Scheduler leaves the default
// rule out when the user rule may create (every YARN application has a user); a job here
// may name none, and goes to root.default.
func (s Settings) DefaultPlacement() []Rule {
	rules := []Rule{{Name: "specified", Create: s.AllowUndeclaredPools}}
	if s.UserAsDefaultQueue {
		rules = append(rules, Rule{Name: "user", Create: s.AllowUndeclaredPools})
	}
	return append(rules, Rule{Name: "default", Create: true})
}

// Place runs the placement policy for an application: each rule places it, rejects it, or
// passes it on to the next. A rule whose create is false passes on a queue the file does
// not configure. Applications go to leaf queues only: a rule that lands on a parent queue
// rejects. Periods in user and group names become "_dot_". A file without a policy places
// by the settings (DefaultPlacement); with one, the settings play no part, as in Hadoop.
func (a *Allocations) Place(s Submitter) (Placement, error) {
	rules := a.Placement
	if len(rules) == 0 {
		rules = a.DefaultPlacement()
	}
	for _, r := range rules {
		path, decided, err := a.apply(r, s)
		if err != nil {
			return Placement{}, err
		}
		if !decided {
			continue
		}
		q := a.Queue(path)
		if q != nil && (!q.IsLeaf() || q.Path == "root") {
			return Placement{}, fmt.Errorf("%w: rule %s chose %s, a parent queue; applications go to leaf queues", ErrRejected, r.Name, path)
		}
		if q == nil && a.parentIsLeaf(path) {
			return Placement{}, fmt.Errorf("%w: rule %s chose %s, under a leaf queue", ErrRejected, r.Name, path)
		}
		return Placement{Queue: path, Created: q == nil, Rule: r.Name}, nil
	}
	return Placement{}, fmt.Errorf("%w: no rule placed it", ErrRejected)
}

// PlaceJob places a job that asks for queue ("" for none) on behalf of user, whose first group
// is its primary group and the rest its secondary ones: the placement every admission
// request gets (Admitter.Request), and the one a Scheduling's claim shows in the job's status
// before Admission has placed it.
func (a *Allocations) PlaceJob(queue, user string, groups []string) (Placement, error) {
	s := Submitter{Queue: queue, User: user}
	if len(groups) > 0 {
		s.PrimaryGroup, s.SecondaryGroups = groups[0], groups[1:]
	}
	return a.Place(s)
}

// apply runs one rule: decided false means "next rule".
func (a *Allocations) apply(r Rule, s Submitter) (path string, decided bool, err error) {
	exists := func(p string) bool { return a.Queue(p) != nil }
	place := func(p string) (string, bool, error) {
		if !r.Create && !exists(p) {
			return "", false, nil
		}
		return p, true, nil
	}
	switch r.Name {
	case "reject":
		return "", false, fmt.Errorf("%w: the reject rule", ErrRejected)
	case "specified":
		q := strings.TrimSpace(s.Queue)
		if q == "" || q == "default" || q == "root.default" {
			return "", false, nil
		}
		if strings.HasPrefix(q, ".") || strings.HasSuffix(q, ".") || strings.Contains(q, "..") {
			return "", false, fmt.Errorf("%w: queue name %q starts or ends with a period", ErrRejected, q)
		}
		return place(FullPath(q))
	case "user", "nestedUserQueue":
		return a.under(r, s, []string{s.User}, place)
	case "primaryGroup":
		return a.under(r, s, []string{s.PrimaryGroup}, place)
	case "secondaryGroupExistingQueue":
		return a.under(r, s, s.SecondaryGroups, func(p string) (string, bool, error) { return p, exists(p), nil })
	case "default":
		q := r.Queue
		if q == "" {
			q = "root.default"
		}
		return place(FullPath(q))
	default:
		return "", false, fmt.Errorf("unknown placement rule %q", r.Name)
	}
}

// under places by a user or group rule: in the queue named after the first of names that
// place takes, under root, or under the queue r's parent rule picks. The rule passes the job
// on when the parent rule does, or picks a configured leaf queue; a parent rule that may
// create its queue makes it a parent queue.
func (a *Allocations) under(r Rule, s Submitter, names []string, place func(string) (string, bool, error)) (string, bool, error) {
	parent := "root"
	if r.Nested != nil {
		p, ok, err := a.apply(*r.Nested, s)
		if err != nil || !ok {
			return "", false, err
		}
		if pq := a.Queue(p); pq != nil && pq.IsLeaf() && pq.Path != "root" {
			return "", false, nil
		}
		parent = p
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if path, ok, err := place(parent + "." + cleanName(n)); err != nil || ok {
			return path, ok, err
		}
	}
	return "", false, nil
}

// parentIsLeaf: a new queue at path would hang under a configured leaf queue.
func (a *Allocations) parentIsLeaf(path string) bool {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return false
	}
	p := a.Queue(path[:i])
	return p != nil && p.IsLeaf() && p.Path != "root"
}

// FullPath is a queue path with its root: "team.etl" and "root.team.etl" are one queue.
func FullPath(q string) string {
	if q == "root" || strings.HasPrefix(q, "root.") {
		return q
	}
	return "root." + q
}

// cleanName makes a user or group name a queue name: periods become "_dot_".
func cleanName(n string) string { return strings.ReplaceAll(strings.TrimSpace(n), ".", "_dot_") }
