package queue

import (
	"encoding/xml"
	"slices"
	"strconv"
	"strings"
)

// ruleNames are the placement rules of the source.
var ruleNames = []string{"specified", "user", "primaryGroup", "secondaryGroupExistingQueue", "nestedUserQueue", "default", "reject"}

func (p *parser) rules(element string) ([]Rule, error) {
	var rules []Rule
	for {
		tok, err := p.next()
		if err != nil {
			return nil, err
		}
		s, ok := tok.(xml.StartElement)
		if !ok {
			if len(rules) == 0 {
				return nil, p.errf(element, "a placement policy needs at least one rule")
			}
			return rules, nil
		}
		r, err := p.rule(s)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
}

func (p *parser) rule(s xml.StartElement) (Rule, error) {
	if s.Name.Local != "rule" {
		return Rule{}, p.errf(s.Name.Local, "a placement policy holds only <rule> elements")
	}
	r := Rule{Create: true, Line: p.line}
	r.Name, _ = attr(s, "name")
	if !slices.Contains(ruleNames, r.Name) {
		return Rule{}, p.errf("rule", "unknown rule %q (known: %s)", r.Name, strings.Join(ruleNames, ", "))
	}
	if c, ok := attr(s, "create"); ok {
		b, err := strconv.ParseBool(c)
		if err != nil {
			return Rule{}, p.errf("rule", "create=%q is not true or false", c)
		}
		r.Create = b
	}
	if q, ok := attr(s, "queue"); ok {
		if r.Name != "default" {
			return Rule{}, p.errf("rule", "only the default rule takes a queue attribute")
		}
		r.Queue = q
	}
	for {
		tok, err := p.next()
		if err != nil {
			return Rule{}, err
		}
		c, ok := tok.(xml.StartElement)
		if !ok {
			break
		}
		if r.Name != "nestedUserQueue" || r.Nested != nil {
			return Rule{}, p.errf("rule", "only nestedUserQueue holds a rule, and exactly one")
		}
		nested, err := p.rule(c)
		if err != nil {
			return Rule{}, err
		}
		r.Nested = &nested
	}
	if r.Name == "nestedUserQueue" && r.Nested == nil {
		return Rule{}, p.errAt(r.Line, "rule", "nestedUserQueue needs the rule that picks the parent queue inside it")
	}
	return r, nil
}

// Terminal reports whether a rule never passes an application on to the next rule.
func (r Rule) Terminal() bool {
	switch r.Name {
	case "reject":
		return true
	case "default", "user", "primaryGroup":
		return r.Create
	default:
		return false
	}
}
