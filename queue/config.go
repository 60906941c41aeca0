package queue

import "fmt"

// Config is the queue configuration in force: the last allocation file that parsed, and
// what became of the newest one.
type Config struct {
	// Allocations is the configuration in force (never nil: an empty file's defaults until
	// a good file arrives).
	Allocations *Allocations
	// Version identifies the source of Allocations (a ConfigMap's resourceVersion, a file's
	// checksum); "" for the built-in defaults.
	Version string
	// Rejected is the newest version that did not parse, and why; empty when the newest is
	// the one in force.
	RejectedVersion string
	Rejected        error
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

// Load takes a new version of the allocation file. A file that parses replaces the
// configuration; one that does not leaves the last good one in force and is reported in
// Rejected. Loading the version in force again changes nothing.
func (c Config) Load(data []byte, version string) Config {
	if version != "" && (version == c.Version || version == c.RejectedVersion) {
		return c
	}
	a, err := ParseAllocations(data)
	if err != nil {
		c.RejectedVersion, c.Rejected = version, err
		return c
	}
	return Config{Allocations: a, Version: version}
}
