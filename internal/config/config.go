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
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seedkeeper/seedkeeper/datasource"
	"github.com/seedkeeper/seedkeeper/internal/bound"
	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// DefaultPath is where the configuration file lives.
const DefaultPath = "/etc/seedkeeper/config.yaml"

// MaxSize bounds the configuration file.
const MaxSize = fsutil.SmallFile

// Config is the whole configuration.
type Config struct {
	// Sources are the metadata sources to detect, in order: names from
	// the source table (datasource.Names), which is also the default.
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
		// NetworkWait bounds the wait boot makes for the families the
		// metadata's wait-on-network names; zero does not wait. Default
		// 60s: static addresses are up as soon as they are applied (IPv6
		// ones once duplicate address detection is done), so only a link
		// that stays down, or a duplicate address, pays the bound.
		NetworkWait Duration `yaml:"network_wait"`
	} `yaml:"vmware"`

	Metrics struct {
		// TextfileDir is the directory of node_exporter's textfile
		// collector, where seedkeeper watch keeps seedkeeper.prom
		// current; "" writes none.
		TextfileDir string `yaml:"textfile_dir"`
	} `yaml:"metrics"`

	// Path is the file this was read from; empty for the defaults.
	Path string `yaml:"-"`
}

// Names accepted in network.owner and events.network; the names sources
// accepts are the source table's (datasource.Names).
var (
	KnownOwners = []string{"seedkeeper", "cloud-init"}
	KnownEvents = []string{"boot-new-instance", "boot", "hotplug"}
)

// Default returns the configuration used when there is no file.
func Default() *Config {
	c := &Config{Sources: datasource.Names()}
	c.Network.Owner = "seedkeeper"
	c.Events.Network = []string{"boot", "hotplug"}
	c.Boot.DeviceWait = Duration(60 * time.Second)
	c.VMware.NetworkWait = Duration(60 * time.Second)
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
	if err := yamlx.Check(b); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
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
		if !datasource.ValidSource(s) {
			return fmt.Errorf("sources[%d]: unknown source (want one of %v)", i, datasource.Names())
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
	if d := c.Metrics.TextfileDir; d != "" && (!path.IsAbs(d) || path.Clean(d) != d || d == "/") {
		return errors.New("metrics.textfile_dir: not an absolute, clean path of a directory")
	}
	// Every number and duration goes through the one range check.
	if err := bound.CheckOff("boot.wait", time.Duration(c.Boot.Wait), bound.MinTimeout, bound.MaxTimeout); err != nil {
		return err
	}
	if err := bound.Check("boot.device_wait", time.Duration(c.Boot.DeviceWait), 0, MaxDeviceWait); err != nil {
		return err
	}
	return bound.Check("vmware.network_wait", time.Duration(c.VMware.NetworkWait), 0, MaxNetworkWait)
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

// MaxDeviceWait bounds boot.device_wait: the wait for late seed devices
// is paid by every boot without a source.
const MaxDeviceWait = 10 * time.Minute

// MaxNetworkWait bounds vmware.network_wait: the wait holds back
// cloud-init, and systemd's start timeout of seedkeeper-boot is extended
// only while it lasts.
const MaxNetworkWait = 10 * time.Minute

// Duration is a time.Duration written as "90s", "5m" or a number of seconds.
type Duration time.Duration

// UnmarshalYAML accepts a Go duration string or a number of seconds. The
// range of each key is checked by validate, in one place with the flags'.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		return fmt.Errorf("line %d: want a duration such as 90s", n.Line)
	}
	v, ok := bound.Duration(s)
	if !ok {
		return fmt.Errorf("line %d: not a duration such as 90s, or beyond what a duration holds", n.Line)
	}
	*d = Duration(v)
	return nil
}
