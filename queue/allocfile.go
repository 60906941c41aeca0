package queue

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Policy is how a queue orders its applications, or shares among its children.
type Policy string

// The scheduling policies of the allocation file.
const (
	PolicyFIFO Policy = "fifo"
	PolicyFair Policy = "fair"
	PolicyDRF  Policy = "drf"
)

// QueueConfig is one queue element of the allocation file. Pointers are unset values, which
// inherit (preemption settings) or take the file's defaults (limits).
type QueueConfig struct {
	// Name is the element's name; Path the full dotted name from root (root.a.b).
	Name, Path string
	// Parent: type="parent", a queue that holds no applications even without children.
	Parent                     bool
	MinResources, MaxResources *Resources
	// MaxResourcesPercent is a maxResources given as shares of the test bed ("50%",
	// "memory-mb=50%, vcores=25%"); it and MaxResources are never both set.
	MaxResourcesPercent *Percent
	// MaxChildResources caps each queue a placement rule creates under this one (an amount
	// or MaxChildResourcesPercent), as the Fair Scheduler's maxChildResources does.
	MaxChildResources        *Resources
	MaxChildResourcesPercent *Percent
	// AllowPreemptionFrom false protects the queue and its children from being preemption's
	// victims (unset: allowed).
	AllowPreemptionFrom *bool
	MaxRunningApps      *int
	// MaxAMShare counts on leaf queues only; on a parent it is ignored, as the Fair
	// Scheduler does (its own example sets one there).
	MaxAMShare                   *float64
	Weight                       float64
	Policy                       Policy
	SubmitACL, AdministerACL     *ACL
	MinSharePreemptionTimeout    *time.Duration
	FairSharePreemptionTimeout   *time.Duration
	FairSharePreemptionThreshold *float64
	// StrictOrder and Backfill are slotplane's extensions, inherited down the tree. A strict
	// leaf serves its applications in order: a head that does not fit the free slots
	// reserves them as they free up, and the applications behind it wait (unset: strict for
	// fifo and stateaware leaves, not for fair and drf). Backfill lets an application pass a
	// reserving head when it cannot delay the head's start, judged by expected durations.
	StrictOrder, Backfill *bool
	Children              []*QueueConfig
	// Line is where the element starts in the file.
	Line int
}

// IsLeaf: the queue may hold applications.
func (q *QueueConfig) IsLeaf() bool { return !q.Parent && len(q.Children) == 0 }

// Rule is one rule of the queue placement policy.
type Rule struct {
	Name string
	// Create: the rule may place into a queue the file does not configure.
	Create bool
	// Queue is the default rule's queue.
	Queue string
	// Nested is the rule inside nestedUserQueue.
	Nested *Rule
	Line   int
}

// Allocations is a whole allocation file.
type Allocations struct {
	Root                                *QueueConfig
	UserMaxApps                         map[string]int
	UserMaxAppsDefault                  *int
	QueueMaxAppsDefault                 *int
	QueueMaxResourcesDefault            *Resources
	QueueMaxResourcesDefaultPercent     *Percent
	QueueMaxAMShareDefault              float64
	DefaultQueueSchedulingPolicy        Policy
	DefaultFairSharePreemptionTimeout   *time.Duration
	DefaultMinSharePreemptionTimeout    *time.Duration
	DefaultFairSharePreemptionThreshold *float64
	Placement                           []Rule
	// Settings are the scheduler-wide settings, the properties of yarn-site.xml
	// (ParseSettings); a file read alone has DefaultSettings. They are embedded so that
	// Preemption and StateAware marshal as fields of Allocations itself, where recorded
	// workflow histories and the states running workflows carry have them: those read the
	// same (UnmarshalJSON gives each setting they lack its default).
	Settings
	// Ignored lists what the file, and the settings, say that has no meaning for slots, each
	// with why: the Fair Scheduler accepts it, so a YARN file loads, and slotplane says it
	// does nothing. Elements neither knows are among them (Ignored.Unknown): the Fair
	// Scheduler loads a file without them too.
	Ignored []Ignored
	// Deprecated lists the elements read under an old name the Fair Scheduler still takes
	// (schedulingMode for schedulingPolicy, say), each with the name it stands for.
	Deprecated []Ignored `json:",omitempty"`
}

// UnmarshalJSON reads encoded Allocations; a setting the encoding does not mention takes
// its default, so Allocations encoded before the setting existed mean what they meant then.
func (a *Allocations) UnmarshalJSON(data []byte) error {
	type plain Allocations // the same fields, without this method
	p := plain{Settings: DefaultSettings()}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*a = Allocations(p)
	return nil
}

// Ignored is a setting of the allocation file, or a property of the settings, that
// slotplane reads and does not act on.
type Ignored struct {
	Line    int
	Element string
	// Queue is the queue whose element it is ("" at the top level).
	Queue string
	// Property is set, instead of Element, for a property of the settings (yarn-site.xml).
	Property string `json:",omitempty"`
	Reason   string
	// Unknown: neither the Fair Scheduler nor slotplane knows the element (a misspelt
	// setting, often), and the file loads without it.
	Unknown bool `json:",omitempty"`
}

func (i Ignored) String() string {
	if i.Property != "" {
		return fmt.Sprintf("%s line %d, %s: %s", SettingsFile, i.Line, i.Property, i.Reason)
	}
	where := fmt.Sprintf("line %d, <%s>", i.Line, i.Element)
	if i.Queue != "" {
		where += " of " + i.Queue
	}
	return where + ": " + i.Reason
}

// ConfigError is a mistake in an allocation file or in the settings, with where it is.
type ConfigError struct {
	// File is SettingsFile for a mistake in the settings; "" is the allocation file.
	File    string
	Line    int
	Element string
	// Property is the property of the settings the mistake is in, if any.
	Property string
	Msg      string
}

func (e *ConfigError) Error() string {
	file := e.File
	if file == "" {
		file = "allocation file"
	}
	switch {
	case e.Property != "":
		return fmt.Sprintf("%s line %d, property %s: %s", file, e.Line, e.Property, e.Msg)
	case e.Element != "":
		return fmt.Sprintf("%s line %d, <%s>: %s", file, e.Line, e.Element, e.Msg)
	default:
		return fmt.Sprintf("%s line %d: %s", file, e.Line, e.Msg)
	}
}

// maxFileSize bounds what ParseAllocations reads.
const maxFileSize = 4 << 20

// ParseAllocations reads an allocation file. Every mistake is a *ConfigError naming the
// line and element: unknown elements included, since a misspelt limit silently ignored is a
// limit that does not hold.
func ParseAllocations(data []byte) (*Allocations, error) {
	if len(data) > maxFileSize {
		return nil, &ConfigError{Line: 1, Msg: fmt.Sprintf("the file is over %d bytes", maxFileSize)}
	}
	p := newParser(data, "", "allocations")
	a := &Allocations{
		Root:                         &QueueConfig{Name: "root", Path: "root", Weight: 1, Line: 1},
		UserMaxApps:                  map[string]int{},
		QueueMaxAMShareDefault:       0.5,
		DefaultQueueSchedulingPolicy: PolicyFair,
		Settings:                     DefaultSettings(),
	}
	if err := p.root(); err != nil {
		return nil, err
	}
	if err := p.elements(p.topHandlers(a), p.unknownTop(a)); err != nil {
		return nil, err
	}
	if a.DefaultFairSharePreemptionTimeout == nil {
		a.DefaultFairSharePreemptionTimeout = p.oldFairSharePreemptionTimeout
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// parser reads the allocation file and the settings, both XML with one root element.
type parser struct {
	dec  *xml.Decoder
	line int
	// oldFairSharePreemptionTimeout is a top-level fairSharePreemptionTimeout, the old name of
	// defaultFairSharePreemptionTimeout: it holds unless the new name is set too, wherever.
	oldFairSharePreemptionTimeout *time.Duration
	// blanks counts the runs of blank text read past: an element with none, and no element,
	// has nothing inside.
	blanks int
	// file is ConfigError.File for its mistakes; rootName the root element it expects.
	file, rootName string
}

func newParser(data []byte, file, rootName string) *parser {
	return &parser{dec: xml.NewDecoder(bytes.NewReader(data)), file: file, rootName: rootName}
}

func (p *parser) errf(element, format string, args ...any) error {
	return p.errAt(p.line, element, fmt.Sprintf(format, args...))
}

func (p *parser) errAt(line int, element, msg string) error {
	return &ConfigError{File: p.file, Line: line, Element: element, Msg: msg}
}

// root reads up to the root element's start tag, which must be the one expected.
func (p *parser) root() error {
	start, err := p.firstElement()
	if err != nil {
		return err
	}
	if start.Name.Local != p.rootName {
		return p.errf(start.Name.Local, "the root element must be <%s>", p.rootName)
	}
	return nil
}

func (p *parser) pos() int {
	line, _ := p.dec.InputPos()
	return line
}

// next returns the next start or end element, skipping text, comments and directives.
func (p *parser) next() (xml.Token, error) {
	for {
		tok, err := p.dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, p.errAt(p.pos(), "", fmt.Sprintf("the file ends before </%s>", p.rootName))
			}
			return nil, p.errAt(p.pos(), "", "not well-formed XML: "+err.Error())
		}
		switch t := tok.(type) {
		case xml.StartElement:
			p.line = p.pos()
			return t.Copy(), nil
		case xml.EndElement:
			return t, nil
		case xml.CharData:
			if strings.TrimSpace(string(t)) != "" {
				p.line = p.pos()
				return nil, p.errf("", "text %q outside of any value element", strings.TrimSpace(string(t)))
			}
			p.blanks++
		}
	}
}

func (p *parser) firstElement() (xml.StartElement, error) {
	for {
		tok, err := p.dec.Token()
		if err != nil {
			return xml.StartElement{}, p.errAt(p.pos(), "", fmt.Sprintf("no <%s> element: %v", p.rootName, err))
		}
		if s, ok := tok.(xml.StartElement); ok {
			p.line = p.pos()
			return s, nil
		}
	}
}

// text reads the trimmed character data of a value element up to its end.
func (p *parser) text(name string) (string, error) {
	v, err := p.rawText(name)
	return strings.TrimSpace(v), err
}

func attr(s xml.StartElement, name string) (string, bool) {
	for _, a := range s.Attr {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// elementHandler reads one element, whose start tag s has been read, up to its end tag.
type elementHandler func(s xml.StartElement) error

// children reads the child elements of the current element up to its end tag, giving each
// start tag to each, which reads the element up to its own end tag.
func (p *parser) children(each elementHandler) error {
	for {
		tok, err := p.next()
		if err != nil {
			return err
		}
		s, ok := tok.(xml.StartElement)
		if !ok {
			return nil // the enclosing element's end tag
		}
		if err := each(s); err != nil {
			return err
		}
	}
}

// skip reads past the element whose start tag was just read, its content unread.
func (p *parser) skip() error {
	if err := p.dec.Skip(); err != nil {
		return p.errAt(p.pos(), "", "not well-formed XML: "+err.Error())
	}
	return nil
}

// elements reads the child elements of the current element up to its end tag, giving each
// to the handler of its name; an element no handler takes is the error unknown makes of its
// name, or, when unknown makes none, skipped whole. The top level and queue elements are both
// read this way, each with its own table.
func (p *parser) elements(handlers map[string]elementHandler, unknown func(name string) error) error {
	return p.children(func(s xml.StartElement) error {
		if handle, ok := handlers[s.Name.Local]; ok {
			return handle(s)
		}
		if err := unknown(s.Name.Local); err != nil {
			return err
		}
		return p.skip()
	})
}

// into is the handler of a value element: read parses it (given the element's name, for its
// errors) and the value goes to *dst.
func into[T any](read func(name string) (T, error), dst *T) elementHandler {
	return func(s xml.StartElement) error {
		v, err := read(s.Name.Local)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}
}

// intoPtr is into for a setting that may be unset: *dst points at the value read.
func intoPtr[T any](read func(name string) (T, error), dst **T) elementHandler {
	return into(func(name string) (*T, error) {
		v, err := read(name)
		return &v, err
	}, dst)
}

// topHandlers are the handlers of the elements of <allocations>, reading into a.
func (p *parser) topHandlers(a *Allocations) map[string]elementHandler {
	// A root queue element holds the whole tree: the Fair Scheduler refuses other queues
	// beside it.
	var rootLine, otherLine int
	queue := func(s xml.StartElement) error {
		if name, _ := attr(s, "name"); strings.EqualFold(strings.TrimSpace(name), "root") {
			if otherLine > 0 {
				return p.errf(s.Name.Local, "a root queue cannot stand beside other top-level queues (line %d): put them inside it", otherLine)
			}
			rootLine = p.line
			return p.queueBody(a, a.Root, s.Name.Local)
		}
		if rootLine > 0 {
			return p.errf(s.Name.Local, "no queue can stand beside the root queue (line %d): put it inside", rootLine)
		}
		otherLine = p.line
		return p.childQueue(a, a.Root, s)
	}
	return map[string]elementHandler{
		"queue": queue,
		"pool":  queue,
		"user":  func(s xml.StartElement) error { return p.user(a, s) },

		"userMaxAppsDefault":                  intoPtr(p.count, &a.UserMaxAppsDefault),
		"queueMaxAppsDefault":                 intoPtr(p.count, &a.QueueMaxAppsDefault),
		"queueMaxResourcesDefault":            p.limit(a, "", &a.QueueMaxResourcesDefault, &a.QueueMaxResourcesDefaultPercent),
		"reservation-agent":                   ignore(p, a, "", whyNoReservations, p.text),
		"reservation-policy":                  ignore(p, a, "", whyNoReservations, p.text),
		"reservation-planner":                 ignore(p, a, "", whyNoReservations, p.text),
		"queueMaxAMShareDefault":              into(p.amShare, &a.QueueMaxAMShareDefault),
		"defaultQueueSchedulingPolicy":        into(p.defaultPolicy, &a.DefaultQueueSchedulingPolicy),
		"defaultQueueSchedulingMode":          renamed(p, a, "", "defaultQueueSchedulingPolicy", into(p.defaultPolicy, &a.DefaultQueueSchedulingPolicy)),
		"fairSharePreemptionTimeout":          renamed(p, a, "", "defaultFairSharePreemptionTimeout", intoPtr(p.seconds, &p.oldFairSharePreemptionTimeout)),
		"defaultFairSharePreemptionTimeout":   intoPtr(p.seconds, &a.DefaultFairSharePreemptionTimeout),
		"defaultMinSharePreemptionTimeout":    intoPtr(p.seconds, &a.DefaultMinSharePreemptionTimeout),
		"defaultFairSharePreemptionThreshold": intoPtr(p.fraction, &a.DefaultFairSharePreemptionThreshold),
		"queuePlacementPolicy":                p.placementPolicy(a),
	}
}

// movedToSettings are the elements slotplane once took at the top of the allocation file
// for what Hadoop sets in yarn-site.xml, each with the property that replaced it: a file
// that still has one is refused with where the setting went.
var movedToSettings = map[string]string{
	"preemption":                             PropPreemption,
	"preemptionUtilizationThreshold":         PropPreemptionThreshold,
	"preemptSlotBased":                       PropPreemptSlotBased,
	"stateAwareSkipStartingWithoutExecutors": PropSkipStartingWithoutExecutors,
	"stateAwareSlotBackedDoNotHold":          PropSlotBackedDoNotHold,
}

// unknownTop takes an element of <allocations> no handler takes. The Fair Scheduler loads
// the file without it, with a warning, and so does slotplane, listing it in a.Ignored; one of
// slotplane's own former elements is refused with where its setting went.
func (p *parser) unknownTop(a *Allocations) func(name string) error {
	return func(name string) error {
		if prop, ok := movedToSettings[name]; ok {
			return p.errf(name, "this setting moved out of the allocation file: set the property %s in %s, the key next to it", prop, SettingsFile)
		}
		p.unknown(a, "", name, "not an element of <allocations>")
		return nil
	}
}

// unknown lists an element no handler takes in a.Ignored: the Fair Scheduler ignores it
// (warning only at the top level), and so does slotplane, saying so.
func (p *parser) unknown(a *Allocations, queue, name, what string) {
	a.Ignored = append(a.Ignored, Ignored{Line: p.line, Element: name, Queue: queue, Unknown: true,
		Reason: what + " the Fair Scheduler or slotplane knows (a typo of a known one?): the file loads without it, as YARN loads it"})
}

// renamed is the handler of an element's old name, which the Fair Scheduler still takes:
// read as the element it stands for (now), and listed in a.Deprecated.
func renamed(p *parser, a *Allocations, queue, now string, read elementHandler) elementHandler {
	return func(s xml.StartElement) error {
		line := p.line
		if err := read(s); err != nil {
			return err
		}
		a.Deprecated = append(a.Deprecated, Ignored{Line: line, Element: s.Name.Local, Queue: queue,
			Reason: fmt.Sprintf("the old name of <%s>, read as it", now)})
		return nil
	}
}

// Why the Fair Scheduler's settings that slotplane reads have no effect.
const (
	whyNoReservations = "slotplane has no reservation system (capacity booked ahead for a job): read and kept, it does nothing"
	whyNoContainers   = "a test bed's slots are all one size, set by the TestBed: there are no container sizes to cap"
)

// ignore is the handler of an element slotplane accepts and does not act on: read reads
// its value (which must be well-formed: text, or an ACL that parses), and the element is
// noted in a.Ignored with why.
func ignore[T any](p *parser, a *Allocations, queue, why string, read func(name string) (T, error)) elementHandler {
	return func(s xml.StartElement) error {
		line := p.line
		if _, err := read(s.Name.Local); err != nil {
			return err
		}
		a.Ignored = append(a.Ignored, Ignored{Line: line, Element: s.Name.Local, Queue: queue, Reason: why})
		return nil
	}
}

// limit is the handler of a resource limit (maxResources and its kind): an amount into
// *amount or a share of the test bed into *percent; other resource types are noted as
// ignored.
func (p *parser) limit(a *Allocations, queue string, amount **Resources, percent **Percent) elementHandler {
	return func(s xml.StartElement) error {
		line := p.line
		v, err := p.text(s.Name.Local)
		if err != nil {
			return err
		}
		l, err := ParseResourceLimit(v)
		if err != nil {
			return p.errf(s.Name.Local, "%v", err)
		}
		*amount, *percent = nil, nil
		if l.Percent != nil {
			*percent = l.Percent
		} else {
			*amount = &l.Amount
		}
		p.otherResources(a, queue, s.Name.Local, line, l.Others)
		return nil
	}
}

// amount is the handler of minResources: an amount, other resource types noted as ignored.
func (p *parser) amount(a *Allocations, queue string, dst **Resources) elementHandler {
	return func(s xml.StartElement) error {
		line := p.line
		v, err := p.text(s.Name.Local)
		if err != nil {
			return err
		}
		set, err := parseSetting(v, false)
		if err != nil {
			if pct, perr := parseSetting(v, true); perr == nil && pct.percent != nil {
				a.Ignored = append(a.Ignored, Ignored{Line: line, Element: s.Name.Local, Queue: queue,
					Reason: "a minimum as a percentage: the Fair Scheduler reads it as no minimum, and so does slotplane"})
				return nil
			}
			return p.errf(s.Name.Local, "%v", err)
		}
		*dst = &set.amount
		p.otherResources(a, queue, s.Name.Local, line, set.others)
		return nil
	}
}

func (p *parser) otherResources(a *Allocations, queue, element string, line int, others []string) {
	if len(others) > 0 {
		a.Ignored = append(a.Ignored, Ignored{Line: line, Element: element, Queue: queue,
			Reason: strings.Join(others, ", ") + ": slots count memory and cpu only; the rest of the setting holds"})
	}
}

// childQueue reads a queue element under parent.
func (p *parser) childQueue(a *Allocations, parent *QueueConfig, s xml.StartElement) error {
	name, ok := attr(s, "name")
	name = strings.TrimSpace(name) // as the Fair Scheduler reads it
	switch {
	case !ok || name == "":
		return p.errf(s.Name.Local, "a queue needs a name attribute")
	case strings.Contains(name, "."):
		return p.errf(s.Name.Local, "queue name %q contains a period: nest queue elements instead", name)
	}
	for _, c := range parent.Children {
		if c.Name == name {
			return p.errf(s.Name.Local, "queue %s.%s is configured twice (line %d)", parent.Path, name, c.Line)
		}
	}
	q := &QueueConfig{Name: name, Path: parent.Path + "." + name, Weight: 1, Line: p.line}
	if t, ok := attr(s, "type"); ok {
		if t == "parent" {
			q.Parent = true
		} else {
			a.Ignored = append(a.Ignored, Ignored{Line: p.line, Element: s.Name.Local, Queue: q.Path,
				Reason: fmt.Sprintf("type=%q: only \"parent\" means anything, as in the Fair Scheduler; the queue's elements decide what it is", t)})
		}
	}
	parent.Children = append(parent.Children, q)
	line := p.line
	if err := p.queueBody(a, q, s.Name.Local); err != nil {
		return err
	}
	if q.Parent || len(q.Children) > 0 {
		for _, i := range a.Ignored {
			if i.Queue == q.Path && i.Element == "reservation" {
				return p.errAt(i.Line, "reservation", fmt.Sprintf("queue %s (line %d) has child queues or type=\"parent\": it cannot also have a reservation element", q.Path, line))
			}
		}
	}
	return nil
}

// queueBody reads the elements of queue q's element (named element: queue or pool) into q.
func (p *parser) queueBody(a *Allocations, q *QueueConfig, element string) error {
	return p.elements(p.queueHandlers(a, q), func(name string) error {
		p.unknown(a, q.Path, name, fmt.Sprintf("not an element of <%s>", element))
		return nil
	})
}

// queueHandlers are the handlers of the elements of queue q's element, reading into q.
func (p *parser) queueHandlers(a *Allocations, q *QueueConfig) map[string]elementHandler {
	child := func(s xml.StartElement) error { return p.childQueue(a, q, s) }
	return map[string]elementHandler{
		"queue": child,
		"pool":  child,

		"minResources":                 p.amount(a, q.Path, &q.MinResources),
		"maxResources":                 p.limit(a, q.Path, &q.MaxResources, &q.MaxResourcesPercent),
		"maxChildResources":            p.limit(a, q.Path, &q.MaxChildResources, &q.MaxChildResourcesPercent),
		"allowPreemptionFrom":          intoPtr(p.boolean, &q.AllowPreemptionFrom),
		"aclSubmitReservations":        ignore(p, a, q.Path, whyNoReservations, p.acl),
		"aclAdministerReservations":    ignore(p, a, q.Path, whyNoReservations, p.acl),
		"aclListReservations":          ignore(p, a, q.Path, whyNoReservations, p.acl),
		"reservation":                  ignore(p, a, q.Path, whyNoReservations, p.text),
		"maxContainerAllocation":       ignore(p, a, q.Path, whyNoContainers, p.text),
		"maxRunningApps":               intoPtr(p.count, &q.MaxRunningApps),
		"maxAMShare":                   intoPtr(p.amShare, &q.MaxAMShare),
		"weight":                       into(p.weight, &q.Weight),
		"schedulingPolicy":             into(p.policy, &q.Policy),
		"schedulingMode":               renamed(p, a, q.Path, "schedulingPolicy", into(p.policy, &q.Policy)),
		"aclSubmitApps":                intoPtr(p.acl, &q.SubmitACL),
		"aclAdministerApps":            intoPtr(p.acl, &q.AdministerACL),
		"minSharePreemptionTimeout":    intoPtr(p.seconds, &q.MinSharePreemptionTimeout),
		"fairSharePreemptionTimeout":   intoPtr(p.seconds, &q.FairSharePreemptionTimeout),
		"fairSharePreemptionThreshold": intoPtr(p.fraction, &q.FairSharePreemptionThreshold),
		"strictOrder":                  intoPtr(p.boolean, &q.StrictOrder),
		"backfill":                     intoPtr(p.boolean, &q.Backfill),
	}
}

// rawText reads the character data of a value element up to its end, untrimmed: an ACL's
// leading space means "groups only".
func (p *parser) rawText(name string) (string, error) {
	var sb strings.Builder
	for {
		tok, err := p.dec.Token()
		if err != nil {
			return "", p.errAt(p.pos(), name, "not well-formed XML: "+err.Error())
		}
		switch t := tok.(type) {
		case xml.CharData:
			sb.Write(t)
		case xml.StartElement:
			return "", p.errf(name, "a value element cannot hold <%s>", t.Name.Local)
		case xml.EndElement:
			return sb.String(), nil
		}
	}
}

func (p *parser) user(a *Allocations, s xml.StartElement) error {
	name, ok := attr(s, "name")
	if !ok || strings.TrimSpace(name) == "" {
		return p.errf("user", "a user needs a name attribute")
	}
	if _, dup := a.UserMaxApps[name]; dup {
		return p.errf("user", "user %s is configured twice", name)
	}
	limit := -1 // no limit of its own unless given
	err := p.elements(p.userHandlers(&limit), func(element string) error {
		p.unknown(a, "", element, fmt.Sprintf("not an element of <user name=%q> (it holds maxRunningApps)", name))
		return nil
	})
	if err != nil {
		return err
	}
	if limit >= 0 {
		a.UserMaxApps[name] = limit
	}
	return nil
}

// userHandlers are the handlers of the elements of a user element: its limit goes to *limit.
func (p *parser) userHandlers(limit *int) map[string]elementHandler {
	return map[string]elementHandler{"maxRunningApps": into(p.count, limit)}
}

func (a *Allocations) validate() error {
	var check func(q *QueueConfig) error
	check = func(q *QueueConfig) error {
		if q.MinResources != nil && q.MaxResources != nil && !q.MinResources.Fits(*q.MaxResources) {
			// The Fair Scheduler warns and loads it; its maximum wins over its minimum.
			capped := q.MinResources.Min(*q.MaxResources)
			a.Ignored = append(a.Ignored, Ignored{Line: q.Line, Element: "minResources", Queue: q.Path,
				Reason: fmt.Sprintf("minResources %s exceed maxResources %s: the minimum share is %s, as in the Fair Scheduler, where the maximum wins", q.MinResources, q.MaxResources, capped)})
			q.MinResources = &capped
		}
		for _, c := range q.Children {
			if err := check(c); err != nil {
				return err
			}
		}
		return nil
	}
	return check(a.Root)
}

// Queue finds a configured queue by its name; "root." is optional ("a.b" is "root.a.b").
func (a *Allocations) Queue(name string) *QueueConfig {
	path := name
	if path != "root" && !strings.HasPrefix(path, "root.") {
		path = "root." + path
	}
	var find func(q *QueueConfig) *QueueConfig
	find = func(q *QueueConfig) *QueueConfig {
		if q.Path == path {
			return q
		}
		if !strings.HasPrefix(path, q.Path+".") {
			return nil
		}
		for _, c := range q.Children {
			if f := find(c); f != nil {
				return f
			}
		}
		return nil
	}
	return find(a.Root)
}
