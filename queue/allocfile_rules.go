package queue

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
)

// ruleNames are the placement rules of the source.
var ruleNames = []string{"specified", "user", "primaryGroup", "secondaryGroupExistingQueue", "nestedUserQueue", "default", "reject"}

// placementPolicy is the handler of <queuePlacementPolicy>, read as Hadoop 3 reads it. Its
// <rule> elements (the tag in any case) are the policy; other elements are skipped, and
// listed in a.Ignored. An element with nothing inside is refused; one with no rule keeps the
// policy the settings make (DefaultPlacement). A later policy element replaces an earlier one.
func (p *parser) placementPolicy(a *Allocations) elementHandler {
	return func(s xml.StartElement) error {
		line, blanks := p.line, p.blanks
		var rules []Rule
		empty := true
		err := p.children(func(c xml.StartElement) error {
			empty = false
			if !strings.EqualFold(c.Name.Local, "rule") {
				return p.skipListed(a, c.Name.Local, "not a <rule>: the Fair Scheduler skips it")
			}
			r, err := p.rule(a, c, nil)
			rules = append(rules, r)
			return err
		})
		if err != nil {
			return err
		}
		switch {
		case empty && p.blanks == blanks:
			return p.errAt(line, s.Name.Local, "an empty placement policy: it needs <rule> elements")
		case len(rules) == 0:
			p.skipped(a, s.Name.Local, "holds no <rule>: jobs are placed as the settings say (user-as-default-queue, allow-undeclared-pools), as the Fair Scheduler places them")
			return nil
		}
		if err := checkReach(rules); err != nil {
			return err
		}
		a.Placement = rules
		return nil
	}
}

// skipped lists in a.Ignored a placement element the Fair Scheduler reads past, with why.
func (p *parser) skipped(a *Allocations, element, why string) {
	a.Ignored = append(a.Ignored, Ignored{Line: p.line, Element: element, Reason: why})
}

// skipListed reads past the element just started, listing it in a.Ignored with why.
func (p *parser) skipListed(a *Allocations, element, why string) error {
	p.skipped(a, element, why)
	return p.skip()
}

// rule reads one <rule>, whose start tag is s, up to its end tag. outer is the rule it is the
// parent rule of (nil for a rule of the policy itself). The element is always read whole,
// and its first mistake returned after: a parent rule the Fair Scheduler drops (all but the
// last) is never checked.
func (p *parser) rule(a *Allocations, s xml.StartElement, outer *Rule) (Rule, error) {
	r := Rule{Create: true, Line: p.line}
	var mistake error
	fail := func(format string, args ...any) {
		if mistake == nil {
			mistake = p.errAt(r.Line, "rule", fmt.Sprintf(format, args...))
		}
	}
	r.Name, _ = attr(s, "name")
	switch {
	case r.Name == "":
		fail("a rule needs a name (known: %s)", strings.Join(ruleNames, ", "))
	case !slices.Contains(ruleNames, r.Name):
		fail("unknown rule %q (known: %s)", r.Name, strings.Join(ruleNames, ", "))
	}
	if c, ok := attr(s, "create"); ok && c != "" {
		r.Create = strings.EqualFold(c, "true")
		if !r.Create && !strings.EqualFold(c, "false") {
			p.skipped(a, "rule", fmt.Sprintf("create=%q on the %s rule is neither true nor false: read as false, as the Fair Scheduler reads it", c, r.Name))
		}
	}
	if q, ok := attr(s, "queue"); ok {
		switch {
		case r.Name != "default":
			p.skipped(a, "rule", fmt.Sprintf("queue=%q on the %s rule: only the default rule reads a queue", q, r.Name))
		case q != strings.TrimSpace(q) || strings.HasPrefix(q, ".") || strings.HasSuffix(q, "."):
			p.skipped(a, "rule", fmt.Sprintf("queue=%q on the default rule is not a queue name: the rule places in root.default, as the Fair Scheduler does", q))
		default:
			r.Queue = q
		}
	}
	if outer != nil {
		switch {
		case r.Name == "reject" || r.Name == "nestedUserQueue":
			fail("the %s rule cannot be a parent rule", r.Name)
		case family(r.Name) == family(outer.Name):
			fail("the parent rule of the %s rule cannot be of its own kind (%s)", outer.Name, r.Name)
		}
	}
	parentErr := p.parentRules(a, &r, outer)
	if mistake != nil {
		return Rule{}, mistake
	}
	if parentErr != nil {
		return Rule{}, parentErr
	}
	switch {
	case r.Name == "nestedUserQueue" && r.Nested == nil:
		return Rule{}, p.errAt(r.Line, "rule", "the nestedUserQueue rule needs a parent rule inside it, the rule that picks the queue its user queues go under")
	case r.Nested != nil && (r.Name == "default" || r.Name == "specified" || r.Name == "reject"):
		return Rule{}, p.errAt(r.Line, "rule", fmt.Sprintf("the %s rule takes no parent rule", r.Name))
	}
	return r, nil
}

// parentRules reads the elements inside rule r up to its end tag. A rule of the policy may
// hold a parent rule, the rule that picks the queue r's queue goes under; of several, the
// Fair Scheduler takes the last, and so does slotplane, listing the others in a.Ignored. A
// parent rule's own elements, and any element that is no <rule>, are skipped and listed.
func (p *parser) parentRules(a *Allocations, r *Rule, outer *Rule) error {
	var last error
	err := p.children(func(c xml.StartElement) error {
		switch {
		case outer != nil:
			return p.skipListed(a, c.Name.Local, fmt.Sprintf("inside the parent rule of the %s rule: the Fair Scheduler reads no deeper", outer.Name))
		case !strings.EqualFold(c.Name.Local, "rule"):
			return p.skipListed(a, c.Name.Local, "not a <rule>: the Fair Scheduler skips it")
		}
		if r.Nested != nil || last != nil {
			p.skipped(a, "rule", fmt.Sprintf("the %s rule has more than one parent rule: the last one is used, as the Fair Scheduler uses it", r.Name))
		}
		// A mistake in it counts only if it is the last: the element is read whole either
		// way, and malformed XML fails the next read.
		nested, err := p.rule(a, c, r)
		r.Nested, last = nil, err
		if err == nil {
			r.Nested = &nested
		}
		return nil
	})
	if err != nil {
		return err
	}
	return last
}

// family names the kind of a rule: nestedUserQueue is the user rule with a parent rule.
func family(name string) string {
	if name == "nestedUserQueue" {
		return "user"
	}
	return name
}

// checkReach refuses a policy whose rules cannot all be reached, or whose last rule may pass
// an application on to nothing, as the Fair Scheduler refuses it.
func checkReach(rules []Rule) error {
	for i, r := range rules[:len(rules)-1] {
		if r.Terminal() {
			return &ConfigError{Line: rules[i+1].Line, Element: "rule", Msg: fmt.Sprintf("rule %d (%s) can never be reached: rule %d (%s, create=%t) places or rejects every application", i+2, rules[i+1].Name, i+1, r.Name, r.Create)}
		}
	}
	if last := rules[len(rules)-1]; !last.Terminal() {
		return &ConfigError{Line: last.Line, Element: "rule", Msg: fmt.Sprintf("the last rule (%s, create=%t) may pass an application on, and nothing follows it", last.Name, last.Create)}
	}
	return nil
}

// Terminal reports whether a rule never passes an application on to the next rule, as
// Hadoop 3 counts it: reject always; specified and secondaryGroupExistingQueue never; the
// others when they may create their queue, and, with a parent rule, when the parent rule
// is terminal too (a parent of kind specified or secondaryGroupExistingQueue never is).
func (r Rule) Terminal() bool {
	switch r.Name {
	case "reject":
		return true
	case "specified", "secondaryGroupExistingQueue":
		return false
	}
	return r.Create && (r.Nested == nil || r.Nested.Terminal())
}
