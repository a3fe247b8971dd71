// Package config reads seedkeeper's configuration file,
// /etc/seedkeeper/config.yaml. Every key has a default, so no file is
// needed; a key the program does not know is an error (a typo must not be
// silently ignored).
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// DefaultPath is where the configuration file lives.
const DefaultPath = "/etc/seedkeeper/config.yaml"

// MaxSize bounds the configuration file.
const MaxSize = fsutil.SmallFile

// Config is the whole configuration.
type Config struct {
	// Sources are the metadata sources to detect, in order.
	Sources []string `yaml:"sources"`

	Mdata struct {
		// Transport forces the mdata transport ("serial:/dev/ttyS1",
		// "unix:PATH", "vsock:CID:PORT"); SEEDKEEPER_MDATA overrides it.
		Transport string `yaml:"transport"`
	} `yaml:"mdata"`

	Boot struct {
		// Wait bounds the wait for a detected mdata host at boot; zero
		// waits as long as it takes (boot cannot go on without identity).
		Wait Duration `yaml:"wait"`
		// DeviceWait bounds the wait for late seed devices (the udev
		// queue draining) when no source is found at first; zero does
		// not wait. Default 60s (nosource.DefaultDeviceWait says why):
		// the wait ends as soon as udev is done, so only a sourceless
		// boot with udev still busy pays the bound.
		DeviceWait Duration `yaml:"device_wait"`
	} `yaml:"boot"`

	Network struct {
		// Owner is "seedkeeper" (apply and render the network ourselves)
		// or "cloud-init" (hand it the network-config instead).
		Owner string `yaml:"owner"`
	} `yaml:"network"`

	Events struct {
		// Network lists the events that apply the network: boot,
		// hotplug (boot-new-instance always applies).
		Network []string `yaml:"network"`
	} `yaml:"events"`

	Hotplug struct {
		// Drivers is the driver allowlist. It is kept raw: whether it is
		// well formed is the allowlist's decision, and a malformed one
		// allows nothing.
		Drivers yaml.Node `yaml:"drivers"`
	} `yaml:"hotplug"`

	VMware struct {
		// Redact clears guestinfo user-data and metadata after reading.
		Redact bool `yaml:"redact"`
	} `yaml:"vmware"`

	// Path is the file this was read from; empty for the defaults.
	Path string `yaml:"-"`
}

// Names accepted in sources, network.owner and events.network.
var (
	KnownSources = []string{"smartos", "vmware", "nocloud"}
	KnownOwners  = []string{"seedkeeper", "cloud-init"}
	KnownEvents  = []string{"boot-new-instance", "boot", "hotplug"}
)

// Default returns the configuration used when there is no file.
func Default() *Config {
	c := &Config{Sources: slices.Clone(KnownSources)}
	c.Network.Owner = "seedkeeper"
	c.Events.Network = []string{"boot", "hotplug"}
	c.Boot.DeviceWait = Duration(60 * time.Second)
	return c
}

// HotplugDriversSet reports whether the file sets hotplug.drivers.
func (c *Config) HotplugDriversSet() bool { return c.Hotplug.Drivers.Kind != 0 }

// HotplugDriversValue decodes hotplug.drivers into a plain value (a list
// or a string) for the allowlist to judge.
func (c *Config) HotplugDriversValue() (any, error) {
	var v any
	if err := c.Hotplug.Drivers.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: hotplug.drivers: %w", c.Path, err)
	}
	return v, nil
}

// EventEnabled reports whether the network is applied on event ev.
func (c *Config) EventEnabled(ev string) bool {
	return ev == "boot-new-instance" || slices.Contains(c.Events.Network, ev)
}

// Load reads the file at path. A missing file gives the defaults. Any other
// problem gives the defaults and an error that names the file, line and key:
// the caller decides what may go on without it (the allowlist must then
// allow nothing).
func Load(path string) (*Config, error) {
	// The one bounded reader: --config /dev/zero or a FIFO must not hang
	// or fill memory.
	b, err := fsutil.ReadFile(context.Background(), path, MaxSize)
	return parse(path, b, err)
}

// LoadIn is Load for the system path p of an image under root (see
// fsutil.ReadFileIn: no link or mount leads out of the root).
func LoadIn(root, p string) (*Config, error) {
	b, err := fsutil.ReadFileIn(context.Background(), root, p, MaxSize)
	return parse(p, b, err)
}

// LoadRoot is LoadIn for the default path under root, for the flows
// (boot, watch, status): errors and Config.Path name the file as the
// operator finds it on disk (root joined with DefaultPath).
func LoadRoot(root string) (*Config, error) {
	b, err := fsutil.ReadFileIn(context.Background(), root, DefaultPath, MaxSize)
	name := DefaultPath
	if root != "" && root != "/" {
		name = filepath.Join(root, DefaultPath)
	}
	return parse(name, b, err)
}

func parse(path string, b []byte, err error) (*Config, error) {
	c := Default()
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading configuration: %w", err)
	}
	n := Default()
	n.Path = path
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(n); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("%s: %w", path, describeYAML(err))
	}
	if err := n.validate(); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

func (c *Config) validate() error {
	// Errors name the key and what is wanted, never the value: the
	// file named by --config may be anything.
	for i, s := range c.Sources {
		if !slices.Contains(KnownSources, s) {
			return fmt.Errorf("sources[%d]: unknown source (want one of %v)", i, KnownSources)
		}
	}
	if !slices.Contains(KnownOwners, c.Network.Owner) {
		return fmt.Errorf("network.owner: not one of %v", KnownOwners)
	}
	for i, e := range c.Events.Network {
		if !slices.Contains(KnownEvents, e) {
			return fmt.Errorf("events.network[%d]: unknown event (want one of %v)", i, KnownEvents)
		}
	}
	if c.Boot.Wait < 0 {
		return fmt.Errorf("boot.wait: must not be negative")
	}
	if c.Boot.DeviceWait < 0 || c.Boot.DeviceWait > Duration(10*time.Minute) {
		return fmt.Errorf("boot.device_wait: must be between 0 and 10m")
	}
	return nil
}

// yamlExcerpt is how the YAML library quotes a value in a type error
// ("cannot unmarshal !!str `SECRETM...` into []string").
var yamlExcerpt = regexp.MustCompile(" `[^`]*`")

// describeYAML drops the value excerpts of a YAML type error, keeping the
// line, the kind and the wanted type: errors describe, never quote.
func describeYAML(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = yamlExcerpt.ReplaceAllString(m, "")
	}
	return &yaml.TypeError{Errors: msgs}
}

// Duration is a time.Duration written as "90s", "5m" or a number of seconds.
type Duration time.Duration

// UnmarshalYAML accepts a Go duration string or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var secs float64
	if err := n.Decode(&secs); err == nil {
		if secs < 0 || secs > float64(math.MaxInt64/int64(time.Second)) || math.IsNaN(secs) {
			return fmt.Errorf("line %d: %v seconds is out of range", n.Line, secs)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as 90s", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: not a duration such as 90s", n.Line)
	}
	*d = Duration(v)
	return nil
}
