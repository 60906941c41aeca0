package queue

import (
	"encoding/xml"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SettingsFile is the name of the settings: Hadoop's yarn-site.xml, which holds the Fair
// Scheduler's scheduler-wide properties. The queues ConfigMap holds it under this key, next
// to the allocation file.
const SettingsFile = "yarn-site.xml"

// The properties slotplane acts on: the Fair Scheduler's, and slotplane's own extensions
// under the prefix slotplane.
const (
	PropUserAsDefaultQueue   = "yarn.scheduler.fair.user-as-default-queue"
	PropAllowUndeclaredPools = "yarn.scheduler.fair.allow-undeclared-pools"
	PropSizeBasedWeight      = "yarn.scheduler.fair.sizebasedweight"
	PropUpdateInterval       = "yarn.scheduler.fair.update-interval-ms"
	PropPreemption           = "yarn.scheduler.fair.preemption"
	PropPreemptionThreshold  = "yarn.scheduler.fair.preemption.cluster-utilization-threshold"

	PropMaxStartingApps              = "slotplane.max-starting-apps"
	PropPreemptSlotBased             = "slotplane.preemption.slot-based"
	PropPreemptBelowFairShare        = "slotplane.preemption.below-fair-share"
	PropSkipStartingWithoutExecutors = "slotplane.stateaware.skip-starting-without-executors"
	PropSlotBackedDoNotHold          = "slotplane.stateaware.slot-backed-do-not-hold"
)

// The two namespaces of properties the settings answer for: a name in either that is not
// known is a mistake; any other name belongs to another part of YARN and is left alone.
const (
	fairPrefix      = "yarn.scheduler.fair."
	slotplanePrefix = "slotplane."
)

// DefaultUpdateInterval is the Fair Scheduler's default update-interval-ms.
const DefaultUpdateInterval = 500 * time.Millisecond

// MaxUpdateInterval bounds update-interval-ms: the interval sets how often the Admission
// workflow recomputes shares and looks for starved queues, and beyond this preemption and
// the StateAware fallback would act minutes late.
const MaxUpdateInterval = 10 * time.Minute

// Settings are the scheduler-wide settings: in Hadoop, yarn-site.xml properties; here the
// key yarn-site.xml of the queues ConfigMap, in the same format (ParseSettings).
type Settings struct {
	// UserAsDefaultQueue (yarn.scheduler.fair.user-as-default-queue, default true): a job
	// that names no queue goes to a queue named after its user, else to root.default. Only
	// for an allocation file without a queuePlacementPolicy.
	UserAsDefaultQueue bool
	// AllowUndeclaredPools (yarn.scheduler.fair.allow-undeclared-pools, default true):
	// placement may make queues the allocation file does not declare; when false, a job
	// headed for one goes to root.default. Only for a file without a queuePlacementPolicy.
	AllowUndeclaredPools bool
	// SizeBasedWeight (yarn.scheduler.fair.sizebasedweight, default false): in a fair or drf
	// leaf, an application weighs log2(1 + its demand in MB) instead of 1 (AppWeight).
	SizeBasedWeight bool
	// UpdateInterval (yarn.scheduler.fair.update-interval-ms, default 500 ms): how often
	// shares are recomputed and starvation is looked for.
	UpdateInterval time.Duration
	// Preemption is yarn.scheduler.fair.preemption, slotplane.preemption.slot-based and
	// slotplane.preemption.below-fair-share.
	Preemption Preemption
	// StateAware tunes the stateaware leaves (slotplane.stateaware.*).
	StateAware StateAwareOptions
	// MaxStartingApps (slotplane.max-starting-apps, default DefaultMaxStartingApps; 0: no
	// bound) bounds the jobs of a test bed that are starting at once: granted, and no
	// executor holding its slot yet (nor StartingTimeout passed). A burst of grants, such as
	// a large bed's first decision, then reaches the cluster at the pace jobs start, instead
	// of all its drivers, applications and workflows at once.
	MaxStartingApps int
	// OtherProperties counts the properties of the settings outside yarn.scheduler.fair.
	// and slotplane.: a whole yarn-site.xml pasted in holds hundreds, for other parts of
	// YARN. They are left alone.
	OtherProperties int `json:",omitempty"`
}

// DefaultMaxStartingApps is slotplane.max-starting-apps's default: on two cores, a bed
// starts a few jobs a second, so a hundred starting at once is a backlog of half a minute.
const DefaultMaxStartingApps = 100

// maxStartingApps bounds slotplane.max-starting-apps.
const maxStartingApps = 1_000_000

// DefaultSettings are the settings without a yarn-site.xml: the Fair Scheduler's defaults,
// and slotplane's extensions off but the bound on starting jobs and
// SkipStartingWithoutExecutors.
func DefaultSettings() Settings {
	return Settings{
		UserAsDefaultQueue:   true,
		AllowUndeclaredPools: true,
		UpdateInterval:       DefaultUpdateInterval,
		StateAware:           StateAwareOptions{SkipStartingWithoutExecutors: true},
		MaxStartingApps:      DefaultMaxStartingApps,
	}
}

// AppWeight is an application's weight among the applications of its leaf: 1, or with
// SizeBasedWeight, log2(1 + demand in MB), as the Fair Scheduler weighs by size.
func (s Settings) AppWeight(demand Resources) float64 {
	if !s.SizeBasedWeight {
		return 1
	}
	return math.Log1p(float64(demand.MemoryBytes)/(1<<20)) / math.Ln2
}

// Property is a setting in force as a yarn-site.xml property.
type Property struct {
	Name, Value string
}

// Properties lists the settings as properties with their values, every property slotplane
// acts on, in name order (what `slotplane queues` prints).
func (s Settings) Properties() []Property {
	var out []Property
	for _, name := range slices.Sorted(maps.Keys(properties)) {
		if p := properties[name]; p.get != nil {
			out = append(out, Property{Name: name, Value: p.get(s)})
		}
	}
	return out
}

// property is a yarn-site.xml property slotplane knows.
type property struct {
	// set checks the value and puts it into s; for a property slotplane does not act on it
	// only checks the value's form, so that a wrong value is caught all the same.
	set func(value string, s *Settings) error
	// get renders the setting in force; nil for a property slotplane does not act on.
	get func(s Settings) string
	// ignored says why slotplane does not act on the property ("" when it does).
	ignored string
}

// Why the Fair Scheduler's properties that slotplane reads have no effect.
const (
	whyAllocationFile = "the allocation file is the key fair-scheduler.xml of the same ConfigMap, not a path"
	whyEventLog       = "slotplane keeps no scheduler event log: its decisions are in the Admission workflow's history and the queues API"
	whyHeartbeats     = "slotplane grants a job all its slots in one decision; there are no node heartbeats to hand out containers on"
	whyLocality       = "slots stand where the TestBed puts them; a job has no node or rack to wait for"
	whyContinuous     = "Admission decides on every change and on its timer (update-interval-ms); there is no second scheduling loop"
	whyStarvationLoop = "starvation is looked for at every decision of Admission (update-interval-ms), not on a timer of its own"
	whyKillWait       = "slotplane takes a victim's executors back in one step: there is no warning period before a kill"
	whyReservableNode = "slots are all one size, so no node is held for a large container; a strict queue's head holds free slots instead (strictOrder)"
	whyUtilization    = "with jobs admitted as gangs of slots, free slots that could start the starving head start it at once, and preemption takes only what the head lacks beyond the free slots: how much of the bed is used never changes what it takes"
)

// properties are the properties slotplane knows: those it acts on, and the rest of what
// the Fair Scheduler reads from yarn-site.xml (Hadoop 2 and 3), accepted and reported as
// ignored so that a YARN cluster's file loads.
var properties = map[string]property{
	PropUserAsDefaultQueue:   flagProperty(func(s *Settings) *bool { return &s.UserAsDefaultQueue }),
	PropAllowUndeclaredPools: flagProperty(func(s *Settings) *bool { return &s.AllowUndeclaredPools }),
	PropSizeBasedWeight:      flagProperty(func(s *Settings) *bool { return &s.SizeBasedWeight }),
	PropUpdateInterval:       millisProperty(func(s *Settings) *time.Duration { return &s.UpdateInterval }, MaxUpdateInterval),
	PropPreemption:           flagProperty(func(s *Settings) *bool { return &s.Preemption.Enabled }),

	PropMaxStartingApps:              countProperty(func(s *Settings) *int { return &s.MaxStartingApps }, maxStartingApps),
	PropPreemptSlotBased:             flagProperty(func(s *Settings) *bool { return &s.Preemption.SlotBased }),
	PropPreemptBelowFairShare:        flagProperty(func(s *Settings) *bool { return &s.Preemption.BelowFairShare }),
	PropSkipStartingWithoutExecutors: flagProperty(func(s *Settings) *bool { return &s.StateAware.SkipStartingWithoutExecutors }),
	PropSlotBackedDoNotHold:          flagProperty(func(s *Settings) *bool { return &s.StateAware.SlotBackedDoNotHold }),

	fairPrefix + "allocation.file":                   ignoredProperty(checkText, whyAllocationFile),
	fairPrefix + "event-log-enabled":                 ignoredProperty(checkFlag, whyEventLog),
	fairPrefix + "assignmultiple":                    ignoredProperty(checkFlag, whyHeartbeats),
	fairPrefix + "dynamic.max.assign":                ignoredProperty(checkFlag, whyHeartbeats),
	fairPrefix + "max.assign":                        ignoredProperty(checkWhole, whyHeartbeats),
	fairPrefix + "locality.threshold.node":           ignoredProperty(checkNumber, whyLocality),
	fairPrefix + "locality.threshold.rack":           ignoredProperty(checkNumber, whyLocality),
	fairPrefix + "locality-delay-node-ms":            ignoredProperty(checkWhole, whyLocality),
	fairPrefix + "locality-delay-rack-ms":            ignoredProperty(checkWhole, whyLocality),
	fairPrefix + "continuous-scheduling-enabled":     ignoredProperty(checkFlag, whyContinuous),
	fairPrefix + "continuous-scheduling-sleep-ms":    ignoredProperty(checkWhole, whyContinuous),
	fairPrefix + "preemptionInterval":                ignoredProperty(checkWhole, whyStarvationLoop),
	fairPrefix + "waitTimeBeforeNextStarvationCheck": ignoredProperty(checkWhole, whyStarvationLoop),
	fairPrefix + "waitTimeBeforeKill":                ignoredProperty(checkWhole, whyKillWait),
	fairPrefix + "reservable-nodes":                  ignoredProperty(checkNumber, whyReservableNode),
	PropPreemptionThreshold:                          ignoredProperty(checkFraction, whyUtilization),
}

func flagProperty(field func(*Settings) *bool) property {
	return property{
		set: func(v string, s *Settings) error {
			b, err := parseFlag(v)
			if err != nil {
				return err
			}
			*field(s) = b
			return nil
		},
		get: func(s Settings) string { return strconv.FormatBool(*field(&s)) },
	}
}

// millisProperty is a duration in whole milliseconds, from 1 ms to most.
func millisProperty(field func(*Settings) *time.Duration, most time.Duration) property {
	return property{
		set: func(v string, s *Settings) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > most.Milliseconds() {
				return fmt.Errorf("%q must be a whole number of milliseconds from 1 to %d", v, most.Milliseconds())
			}
			*field(s) = time.Duration(n) * time.Millisecond
			return nil
		},
		get: func(s Settings) string { return strconv.FormatInt(field(&s).Milliseconds(), 10) },
	}
}

// countProperty is a whole number from 0 to most.
func countProperty(field func(*Settings) *int, most int) property {
	return property{
		set: func(v string, s *Settings) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > most {
				return fmt.Errorf("%q must be a whole number from 0 to %d", v, most)
			}
			*field(s) = n
			return nil
		},
		get: func(s Settings) string { return strconv.Itoa(*field(&s)) },
	}
}

func ignoredProperty(check func(string) error, why string) property {
	return property{set: func(v string, _ *Settings) error { return check(v) }, ignored: why}
}

// parseFlag reads a boolean as Hadoop's configuration does: true or false in any case.
func parseFlag(v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("%q is neither true nor false", v)
}

// parseNumber reads a float as Hadoop's configuration does: Java's float syntax allows a
// trailing f ("0.8f").
func parseNumber(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSuffix(v, "f"), "F"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	return f, nil
}

func checkFlag(v string) error { _, err := parseFlag(v); return err }

func checkNumber(v string) error { _, err := parseNumber(v); return err }

func checkFraction(v string) error {
	if f, err := parseNumber(v); err != nil || f < 0 || f > 1 {
		return fmt.Errorf("%q must be a fraction in [0, 1]", v)
	}
	return nil
}

func checkWhole(v string) error {
	if _, err := strconv.ParseInt(v, 10, 64); err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	return nil
}

func checkText(v string) error {
	if v == "" {
		return fmt.Errorf("the value is empty")
	}
	return nil
}

// ParseSettings reads the settings, a yarn-site.xml: <configuration> holding <property>
// elements, each with a <name> and a <value> (or name and value attributes, which Hadoop 3
// also takes). The properties slotplane acts on set the settings; the Fair Scheduler's other
// properties are checked and returned as ignored, with why; properties of other parts of
// YARN are counted and left alone. Every mistake is a *ConfigError with File SettingsFile,
// naming the line: malformed XML, a property without a name, an unknown name under
// yarn.scheduler.fair. or slotplane. (a misspelt switch silently ignored is a switch that
// is not set), a bad value, or a known property set twice.
func ParseSettings(data []byte) (Settings, []Ignored, error) {
	s := DefaultSettings()
	if len(data) > maxFileSize {
		return s, nil, &ConfigError{File: SettingsFile, Line: 1, Msg: fmt.Sprintf("the file is over %d bytes", maxFileSize)}
	}
	p := newParser(data, SettingsFile, "configuration")
	if err := p.root(); err != nil {
		return s, nil, err
	}
	r := settingsReader{p: p, s: &s, seen: map[string]int{}}
	err := p.elements(map[string]elementHandler{"property": r.property}, func(element string) error {
		return p.errf(element, "unknown element in <configuration>: it holds <property> elements only (includes are not followed)")
	})
	if err != nil {
		return DefaultSettings(), nil, err
	}
	return s, r.ignored, nil
}

// settingsReader reads the properties of one settings file into s.
type settingsReader struct {
	p       *parser
	s       *Settings
	ignored []Ignored
	// seen is the line of each known property read so far.
	seen map[string]int
}

// propertyHandlers are the handlers of the elements of a <property>: its name and value
// into *name and *value; what Hadoop keeps about a property besides (final, source, tag)
// and its description are skipped whole, so no text of theirs can break the file.
func (r *settingsReader) propertyHandlers(name, value *string) map[string]elementHandler {
	skip := func(xml.StartElement) error {
		if err := r.p.dec.Skip(); err != nil {
			return r.p.errAt(r.p.pos(), "", "not well-formed XML: "+err.Error())
		}
		return nil
	}
	return map[string]elementHandler{
		"name":        into(r.p.text, name),
		"value":       into(r.p.text, value),
		"final":       skip,
		"source":      skip,
		"tag":         skip,
		"description": skip,
	}
}

func (r *settingsReader) property(start xml.StartElement) error {
	p, line := r.p, r.p.line
	name, _ := attr(start, "name")
	value, _ := attr(start, "value")
	err := p.elements(r.propertyHandlers(&name, &value), func(element string) error {
		return p.errf(element, "unknown element in <property> (it holds name, value, final, source, tag and description)")
	})
	if err != nil {
		return err
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	fail := func(msg string) error {
		return &ConfigError{File: SettingsFile, Line: line, Element: "property", Property: name, Msg: msg}
	}
	known, ok := properties[name]
	switch {
	case name == "":
		return fail("a property needs a <name>")
	case !ok && (strings.HasPrefix(name, fairPrefix) || strings.HasPrefix(name, slotplanePrefix)):
		return fail(fmt.Sprintf("unknown property (a typo of a known one?); slotplane knows %s", knownNames(name)))
	case !ok:
		r.s.OtherProperties++
		return nil
	}
	if first, dup := r.seen[name]; dup {
		return fail(fmt.Sprintf("set twice (first at line %d)", first))
	}
	r.seen[name] = line
	if err := known.set(value, r.s); err != nil {
		return fail(err.Error())
	}
	if known.ignored != "" {
		r.ignored = append(r.ignored, Ignored{Line: line, Property: name, Reason: known.ignored})
	}
	return nil
}

// knownNames lists the known properties of name's namespace, for an error about a name
// that is not one of them.
func knownNames(name string) string {
	prefix := fairPrefix
	if strings.HasPrefix(name, slotplanePrefix) {
		prefix = slotplanePrefix
	}
	var names []string
	for _, n := range slices.Sorted(maps.Keys(properties)) {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}
