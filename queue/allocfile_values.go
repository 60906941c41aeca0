package queue

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// boolean reads a true or false value element.
func (p *parser) boolean(name string) (bool, error) {
	v, err := p.text(name)
	if err != nil {
		return false, err
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, p.errf(name, "%q is neither true nor false", v)
	}
	return b, nil
}

// weight reads a queue's weight, a non-negative number.
func (p *parser) weight(name string) (float64, error) {
	v, err := p.text(name)
	if err != nil {
		return 0, err
	}
	w, err := strconv.ParseFloat(v, 64)
	if err != nil || w < 0 {
		return 0, p.errf(name, "%q is not a non-negative number", v)
	}
	return w, nil
}

// acl reads an access control list, its text untrimmed (see rawText).
func (p *parser) acl(name string) (ACL, error) {
	v, err := p.rawText(name)
	if err != nil {
		return ACL{}, err
	}
	return ParseACL(v), nil
}

func (p *parser) count(name string) (int, error) {
	v, err := p.text(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, p.errf(name, "%q is not a whole, non-negative number", v)
	}
	return n, nil
}

// amShare is a fraction of the fair share in (0, 1], or -1 to turn the check off.
func (p *parser) amShare(name string) (float64, error) {
	v, err := p.text(name)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "f"), 64)
	if err != nil || (f != -1 && (f <= 0 || f > 1)) {
		return 0, p.errf(name, "%q must be a fraction in (0, 1], or -1 to turn the check off", v)
	}
	return f, nil
}

func (p *parser) fraction(name string) (float64, error) {
	v, err := p.text(name)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "f"), 64)
	if err != nil || f < 0 || f > 1 {
		return 0, p.errf(name, "%q must be a fraction in [0, 1]", v)
	}
	return f, nil
}

func (p *parser) seconds(name string) (time.Duration, error) {
	v, err := p.text(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > int64(100*365*24*3600) {
		return 0, p.errf(name, "%q is not a number of seconds", v)
	}
	return time.Duration(n) * time.Second, nil
}

func (p *parser) policy(name string) (Policy, error) {
	v, err := p.text(name)
	if err != nil {
		return "", err
	}
	pol := Policy(strings.ToLower(v))
	if !slices.Contains([]Policy{PolicyFIFO, PolicyFair, PolicyDRF, PolicyStateAware}, pol) {
		return "", p.errf(name, "%q is not a policy slotplane knows (fifo, fair, drf, stateaware)", v)
	}
	return pol, nil
}

// defaultPolicy reads defaultQueueSchedulingPolicy (or its old name): any policy but fifo,
// which the Fair Scheduler refuses there, since the default applies to parent queues too
// and fifo orders applications, not queues. A leaf takes fifo in its own schedulingPolicy.
func (p *parser) defaultPolicy(name string) (Policy, error) {
	pol, err := p.policy(name)
	if err == nil && pol == PolicyFIFO {
		return "", p.errf(name, "the default policy cannot be fifo (the Fair Scheduler refuses it too): it applies to parent queues, and fifo orders applications, not queues; set fifo in the leaves' schedulingPolicy")
	}
	return pol, err
}
