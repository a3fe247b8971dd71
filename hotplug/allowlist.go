package hotplug

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
	"github.com/seedkeeper/seedkeeper/netcfg"
)

// Where an allowlist can come from, as Allowlist.Origin reports it; one
// the metadata set says "metadata " and the key (Setting.Key).
const (
	OriginConfig  = "config hotplug.drivers"
	OriginFlag    = "flag --drivers"
	originDefault = "default for " // + platform
)

// Allowlist says which kernel drivers' NICs hotplug may configure. The zero
// value allows nothing.
//
// An allowlist built from a value that could not be read or parsed allows
// nothing, and Reason says why: a typo closes the gate, never opens it.
type Allowlist struct {
	drivers []string // sorted, unique
	origin  string
	reason  string
}

// Allows reports whether NICs driven by driver may be configured.
func (a Allowlist) Allows(driver string) bool {
	if a.reason != "" || driver == "" {
		return false
	}
	_, ok := slices.BinarySearch(a.drivers, driver)
	return ok
}

// Origin says where the allowlist came from: "metadata network-drivers",
// "config hotplug.drivers", "flag --drivers", "default for vmware", ...
func (a Allowlist) Origin() string { return a.origin }

// Reason is why the allowlist allows nothing, or "" when it allows what
// Drivers lists.
func (a Allowlist) Reason() string {
	if a.reason == "" && a.origin == "" {
		return "no allowlist was set"
	}
	return a.reason
}

// Drivers returns the allowed driver names, sorted. It is empty when the
// allowlist allows nothing.
func (a Allowlist) Drivers() []string {
	if a.reason != "" {
		return nil
	}
	return slices.Clone(a.drivers)
}

// String describes the allowlist in one line, for logs and status:
// "e1000,vmxnet3 (from metadata network-drivers)" or
// "nothing (config hotplug.drivers: entry 2 "vmx net3": ...)".
func (a Allowlist) String() string {
	if r := a.Reason(); r != "" {
		return "nothing (" + r + ")"
	}
	return strings.Join(a.drivers, ",") + " (from " + a.origin + ")"
}

// NewAllowlist returns an allowlist of drivers that says it came from
// origin. Invalid names make it allow nothing, with the reason set.
func NewAllowlist(origin string, drivers []string) Allowlist {
	for i, d := range drivers {
		if err := netcfg.CheckDriverName(d); err != nil {
			return closed(origin, fmt.Errorf("entry %d: %w", i+1, err))
		}
	}
	return build(origin, drivers)
}

func build(origin string, drivers []string) Allowlist {
	ds := slices.Clone(drivers)
	slices.Sort(ds)
	ds = slices.Compact(ds)
	if len(ds) == 0 {
		return closed(origin, errors.New("the list is empty"))
	}
	return Allowlist{drivers: ds, origin: origin}
}

func closed(origin string, err error) Allowlist {
	return Allowlist{origin: origin, reason: origin + ": " + err.Error() + "; allowing no driver"}
}

// Setting is one raw allowlist value as a source gave it, before parsing.
type Setting struct {
	// Set says the key was present.
	Set bool
	// Value is the raw value: a string "a,b,c", a []string, or a []any of
	// strings as YAML or JSON decode a list. Anything else is an error.
	Value any
	// Err is an error met while reading or decoding the key; it closes
	// the allowlist even when Set is false (the key may have been there).
	Err error
	// Key names the metadata key the value was read from, for Origin
	// (the source's datasource.Source.DriversKey); "" is the key of the
	// source the platform belongs to, or datasource.KeyNetworkDrivers
	// when no source claims it. Unused for the configuration.
	Key string
}

// ResolveAllowlist decides the allowlist in force: the metadata's value if
// it set one, else the config's, else the platform's default. platform is
// the hypervisor family as datasource.Platform names it; its default is
// the one of the source whose guests run there
// (datasource.PlatformSource), and a platform no source claims has none.
//
// A value that cannot be read or parsed, has a name that is not a driver
// name (netcfg.CheckDriverName), or is of the wrong type makes an
// allowlist that allows nothing; its Reason says why and where. It does
// not fall through to the next source: a typo must close the gate, not
// open it.
func ResolveAllowlist(metadata, config Setting, platform string) Allowlist {
	if metadata.Set || metadata.Err != nil {
		key := metadata.Key
		if key == "" {
			src, _ := datasource.PlatformSource(platform)
			key = src.DriversKey
		}
		if key == "" {
			// No source claims the platform: the key every source but
			// VMware reads.
			key = datasource.KeyNetworkDrivers
		}
		return fromSetting("metadata "+key, metadata)
	}
	if config.Set || config.Err != nil {
		return fromSetting(OriginConfig, config)
	}
	origin := originDefault + platform
	if platform == "" {
		origin = originDefault + "unknown platform"
	}
	src, ok := datasource.PlatformSource(platform)
	d := src.Drivers
	if !ok {
		return closed(origin, errors.New("no default allowlist for this platform: set hotplug.drivers"))
	}
	return build(origin, d)
}

func fromSetting(origin string, s Setting) Allowlist {
	if s.Err != nil {
		return closed(origin, fmt.Errorf("cannot be read: %w", s.Err))
	}
	names, err := driverNames(s.Value)
	if err != nil {
		return closed(origin, err)
	}
	return NewAllowlist(origin, names)
}

// driverNames turns a raw value into a list of names, checking each one.
func driverNames(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return ParseDriverList(v)
	case []string:
		return checkNames(v)
	case []any:
		names := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("entry %d is %s, not a driver name", i+1, yamlx.Kind(e))
			}
			names[i] = s
		}
		return checkNames(names)
	default:
		return nil, fmt.Errorf("is %s, not a list of driver names", yamlx.Kind(v))
	}
}

func checkNames(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, errors.New("the list is empty")
	}
	for i, n := range names {
		if err := netcfg.CheckDriverName(n); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
	}
	return names, nil
}

// ParseDriverList parses a comma-separated list of driver names, as the
// --drivers flag and string metadata values give it: "virtio_net,e1000".
// Spaces around a name are dropped; a name netcfg.CheckDriverName refuses
// (an empty one, one longer than 31 bytes, one with a character outside
// a-z 0-9 _ -) is an error naming the entry.
func ParseDriverList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("the list is empty")
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.Trim(p, " \t")
		if err := netcfg.CheckDriverName(parts[i]); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
	}
	return parts, nil
}
