package queue

import "fmt"

// Config is the queue configuration in force: the last allocation file and settings that
// parsed (together: one bad file of the two rejects both), and what became of the newest
// pair. It survives serialization (the Admission workflow carries it across runs).
type Config struct {
	// Allocations is the configuration in force, the settings with it (never nil: an empty
	// file's defaults until a good file arrives).
	Allocations *Allocations
	// Version identifies the source of Allocations (a ConfigMap's resourceVersion, a file's
	// checksum), which changes when either file does; "" for the built-in defaults.
	Version string
	// RejectedVersion is the newest version that did not parse, and Rejected why; empty
	// when the newest is the one in force.
	RejectedVersion string
	Rejected        string
}

// ConfigFiles are the two files of a queue configuration, as the queues ConfigMap holds
// them: the allocation file (fair-scheduler.xml) and the settings (SettingsFile). A file
// that is not there (Has false) takes its defaults.
type ConfigFiles struct {
	Allocations, Settings       []byte
	HasAllocations, HasSettings bool
}

// ParseConfig parses both files into one configuration: the allocation file's, with the
// settings in it and their ignored properties after the file's ignored elements. A mistake
// in either is the error (a *ConfigError whose File says which).
func ParseConfig(f ConfigFiles) (*Allocations, error) {
	data := []byte("<allocations/>")
	if f.HasAllocations {
		data = f.Allocations
	}
	a, err := ParseAllocations(data)
	if err != nil {
		return nil, err
	}
	if !f.HasSettings {
		return a, nil
	}
	s, ignored, err := ParseSettings(f.Settings)
	if err != nil {
		return nil, err
	}
	a.Settings = s
	a.Ignored = append(a.Ignored, ignored...)
	return a, nil
}

// DefaultConfig is the configuration without an allocation file: one level under root,
// fair sharing, queues made by the default placement (the requested queue, else the user's).
func DefaultConfig() Config {
	a, err := ParseAllocations([]byte("<allocations/>"))
	if err != nil {
		panic(fmt.Sprintf("the empty allocation file does not parse: %v", err)) // a constant
	}
	return Config{Allocations: a}
}

// ConfigUpdate is a new version of a test bed's allocation file and settings, parsed: what
// the activity that reads them hands the Admission workflow, so that XML is never parsed in
// workflow code and unchanged files never enter its history.
type ConfigUpdate struct {
	// Missing: there is neither file (the defaults apply).
	Missing bool
	Version string
	// Allocations is the parsed pair; nil when either did not parse, and Rejected says why.
	Allocations *Allocations
	Rejected    string
}

// ReadConfig is ReadConfigFiles for an allocation file alone, the settings at their
// defaults.
func ReadConfig(held Config, exists bool, data []byte, version string) *ConfigUpdate {
	return ReadConfigFiles(held, ConfigFiles{Allocations: data, HasAllocations: exists}, version)
}

// ConfigUnchanged says whether ReadConfigFiles would answer nil (nothing new for held),
// without parsing the files.
func ConfigUnchanged(held Config, f ConfigFiles, version string) bool {
	if !f.HasAllocations && !f.HasSettings {
		return held.Version == "" && held.RejectedVersion == ""
	}
	return version != "" && (version == held.Version || version == held.RejectedVersion)
}

// ReadConfigFiles parses version of the files for a holder of held (only its Version and
// RejectedVersion are read). nil: nothing changed (the same version, in force or rejected).
// Neither file there is a missing configuration: the defaults.
func ReadConfigFiles(held Config, f ConfigFiles, version string) *ConfigUpdate {
	if ConfigUnchanged(held, f, version) {
		return nil
	}
	if !f.HasAllocations && !f.HasSettings {
		return &ConfigUpdate{Missing: true}
	}
	a, err := ParseConfig(f)
	if err != nil {
		return &ConfigUpdate{Version: version, Rejected: err.Error()}
	}
	return &ConfigUpdate{Version: version, Allocations: a}
}

// Apply takes an update in: a file that parsed replaces the configuration; one that did not
// leaves the last good one in force and is reported in Rejected; a removed file brings back
// the defaults.
func (c Config) Apply(u ConfigUpdate) Config {
	switch {
	case u.Missing:
		return DefaultConfig()
	case u.Allocations != nil:
		return Config{Allocations: u.Allocations, Version: u.Version}
	default:
		c.RejectedVersion, c.Rejected = u.Version, u.Rejected
		return c
	}
}
