package queue

import "fmt"

// Config is the queue configuration in force: the last allocation file that parsed, and
// what became of the newest one. It survives serialization (the Admission workflow carries
// it across runs).
type Config struct {
	// Allocations is the configuration in force (never nil: an empty file's defaults until
	// a good file arrives).
	Allocations *Allocations
	// Version identifies the source of Allocations (a ConfigMap's resourceVersion, a file's
	// checksum); "" for the built-in defaults.
	Version string
	// RejectedVersion is the newest version that did not parse, and Rejected why; empty
	// when the newest is the one in force.
	RejectedVersion string
	Rejected        string
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

// ConfigUpdate is a new version of a test bed's allocation file, parsed: what the activity
// that reads the file hands the Admission workflow, so that XML is never parsed in workflow
// code and an unchanged file never enters its history.
type ConfigUpdate struct {
	// Missing: there is no file (the defaults apply).
	Missing bool
	Version string
	// Allocations is the parsed file; nil when it did not parse, and Rejected says why.
	Allocations *Allocations
	Rejected    string
}

// ReadConfig parses version of the file for a holder of held (only its Version and
// RejectedVersion are read). nil: nothing changed (the same version, in force or rejected).
func ReadConfig(held Config, exists bool, data []byte, version string) *ConfigUpdate {
	if !exists {
		if held.Version == "" && held.RejectedVersion == "" {
			return nil
		}
		return &ConfigUpdate{Missing: true}
	}
	if version != "" && (version == held.Version || version == held.RejectedVersion) {
		return nil
	}
	a, err := ParseAllocations(data)
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
