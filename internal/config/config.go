// Package config reads seedkeeper's configuration file,
// /etc/seedkeeper/config.yaml. Every key has a default, so no file is
// needed; a key the program does not know is an error (a typo must not be
// silently ignored).
package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

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
	// the source table (datasource.Names). Nil, the default, is every
	// source in the table's order.
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
		// IMCWait bounds the wait for VMware Tools to write a
		// customization spec when guestinfo is empty and Tools'
		// deployPkg plugin is installed; zero does not wait. Default
		// 15s, cloud-init's vmware_cust_file_max_wait: every later
		// boot of a VM without guestinfo pays it. Nil (a Config not
		// made by Default or a Load) is not set: the default, told
		// apart from a file's 0.
		IMCWait *Duration `yaml:"imc_wait"`
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
// accepts are the source table's, which the caller passes to Load (the
// table lives above this package: datasource.Names).
var (
	KnownOwners = []string{"seedkeeper", "cloud-init"}
	KnownEvents = []string{"boot-new-instance", "boot", "hotplug"}
)

// Default returns the configuration used when there is no file.
func Default() *Config {
	c := &Config{}
	c.Network.Owner = "seedkeeper"
	c.Events.Network = []string{"boot", "hotplug"}
	c.Boot.DeviceWait = Duration(60 * time.Second)
	c.VMware.NetworkWait = Duration(60 * time.Second)
	imcWait := Duration(15 * time.Second)
	c.VMware.IMCWait = &imcWait
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
// allow nothing). The names sources may list are sources (the source
// table's: datasource.Names).
func Load(path string, sources []string) (*Config, error) {
	// The one bounded reader: --config /dev/zero or a FIFO must not hang
	// or fill memory.
	b, err := fsutil.ReadFile(context.Background(), path, MaxSize)
	return parse(path, b, err, sources)
}

// LoadIn is Load for the system path p of an image under root (see
// fsutil.ReadFileIn: no link or mount leads out of the root).
func LoadIn(root, p string, sources []string) (*Config, error) {
	b, err := fsutil.ReadFileIn(context.Background(), root, p, MaxSize)
	return parse(p, b, err, sources)
}

// LoadRoot is LoadIn for the default path under root, for the flows
// (boot, watch, status): errors and Config.Path name the file as the
// operator finds it on disk (root joined with DefaultPath).
func LoadRoot(root string, sources []string) (*Config, error) {
	b, err := fsutil.ReadFileIn(context.Background(), root, DefaultPath, MaxSize)
	name := DefaultPath
	if root != "" && root != "/" {
		name = filepath.Join(root, DefaultPath)
	}
	return parse(name, b, err, sources)
}

func parse(path string, b []byte, err error, sources []string) (*Config, error) {
	c := Default()
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading configuration: %w", err)
	}
	n, probs := read(b, sources)
	if len(probs) > 0 {
		return c, &FileError{File: path, Problems: probs}
	}
	n.Path = path
	return n, nil
}

// Problem is one error of a configuration file: where it is and what is
// wrong, in the file's own words (its keys, and the kinds of value it
// wants), never quoting the value.
type Problem struct {
	// Line and Column (from 1) are where the key or value is.
	Line, Column int
	// Path names the key ("boot.wait", "sources[1]"); "" for the file.
	Path string
	// Msg says what is wrong, starting with Path when there is one.
	Msg string
}

// FileError is a configuration file that cannot be used: every problem
// found in it.
type FileError struct {
	File     string
	Problems []Problem
}

// maxErrorProblems bounds how many problems FileError.Error says; the
// rest are counted. Read (and seedkeeper validate) says every one.
const maxErrorProblems = 8

func (e *FileError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i == maxErrorProblems {
			fmt.Fprintf(&b, "; and %d more (seedkeeper validate says each)", len(e.Problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, p.Line, p.Column, p.Msg)
	}
	return b.String()
}

// Read decodes and checks the text of a configuration file: the
// configuration (Path unset), or every problem Load would refuse it for,
// each located in the text. sources are the names sources may list, as
// for Load.
func Read(b []byte, sources []string) (*Config, []Problem) {
	return read(b, sources)
}

// TopKeys are the keys a configuration file may have at its top.
func TopKeys() []string { return yamlKeys(reflect.TypeFor[Config]()) }

func read(b []byte, sources []string) (*Config, []Problem) {
	n := Default()
	if err := yamlx.Check(b); err != nil {
		return nil, []Problem{{Line: 1, Column: 1, Msg: err.Error()}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		var d *yamlx.Error
		errors.As(yamlx.Describe(err), &d)
		return nil, []Problem{{Line: max(d.Line, 1), Column: 1, Msg: "not YAML: " + d.Msg}}
	}
	// Its aliases, expanded, within the limits before anything is
	// decoded from it.
	if err := yamlx.CheckExpanded(&doc); err != nil {
		return nil, []Problem{{Line: 1, Column: 1, Msg: err.Error()}}
	}
	if len(doc.Content) == 0 {
		return n, nil // empty, or only comments
	}
	top := doc.Content[0]
	var probs []Problem
	add := func(at *yaml.Node, path, msg string) {
		if path != "" {
			msg = path + ": " + msg
		}
		probs = append(probs, Problem{Line: at.Line, Column: at.Column, Path: path, Msg: msg})
	}
	if !checkNode(add, "", top, reflect.TypeFor[Config]()) {
		return nil, probs
	}
	if err := doc.Decode(n); err != nil {
		// checkNode knows every kind the fields take: this is a
		// kind it did not foresee.
		return nil, []Problem{{Line: top.Line, Column: top.Column, Msg: yamlx.Describe(err).Error()}}
	}
	for _, p := range n.validate(sources) {
		at, _ := yamlx.Locate(top, p.path)
		add(at, p.path, p.msg)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return n, nil
}

var (
	nodeType     = reflect.TypeFor[yaml.Node]()
	durationType = reflect.TypeFor[Duration]()
)

// checkNode checks that n is of the kind the field of type t takes, and
// for a section every key is one of its fields, saying each problem
// with add. The keys and kinds come from Config itself: its yaml tags
// are the file's keys. What is wrong is taken out of the tree (an
// unknown key) or made null (a value of the wrong kind), so that the
// rest decodes and its values are checked too; ok is false when n
// itself is wrong.
func checkNode(add func(at *yaml.Node, path, msg string), path string, n *yaml.Node, t reflect.Type) (ok bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem() // an optional value (IMCWait) is checked as the value
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	null := n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
	bad := func(msg string) bool {
		add(n, path, msg)
		return false
	}
	switch {
	case t == nodeType:
		// Kept raw: its reader judges it (hotplug.drivers).
	case t == durationType:
		var d Duration
		if err := d.UnmarshalYAML(n); err != nil {
			return bad(err.Error())
		}
	case null:
		// The key's default.
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping of " + strings.Join(yamlKeys(t), ", ") + ", not " + yamlx.NodeKind(n))
		}
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := yamlField(t, k)
			if !ok {
				what := "a key that is not one of the file's"
				if k.Kind == yaml.ScalarNode && keyWord(k.Value) {
					what = fmt.Sprintf("unknown key %q", k.Value)
				}
				where := "at the top"
				if path != "" {
					where = "in " + path
				}
				add(k, path, fmt.Sprintf("%s (the keys %s are %s)", what, where, strings.Join(yamlKeys(t), ", ")))
				continue
			}
			if !checkNode(add, join(path, k.Value), v, f.Type) {
				v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: v.Line, Column: v.Column}
			}
			kept = append(kept, k, v)
		}
		n.Content = kept
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("want a list of names, not " + yamlx.NodeKind(n))
		}
		ok = true
		for i, e := range n.Content {
			ok = checkNode(add, fmt.Sprintf("%s[%d]", path, i), e, t.Elem()) && ok
		}
		return ok
	case t.Kind() == reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			return bad("want true or false, not " + yamlx.NodeKind(n))
		}
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return bad("want a string, not " + yamlx.NodeKind(n))
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlField finds the field of struct t whose yaml tag is the key k.
func yamlField(t reflect.Type, k *yaml.Node) (reflect.StructField, bool) {
	if k.Kind != yaml.ScalarNode {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == k.Value && name != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKeys lists the keys of a section, as the file spells them.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// keyWord reports whether a key the file has may be named in a message:
// 1 to 40 of a-z, 0-9, '-' and '_', the alphabet of the file's own keys.
func keyWord(s string) bool {
	return s != "" && len(s) <= 40 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
}

// problem is what validate finds wrong with a key's value.
type problem struct{ path, msg string }

func (c *Config) validate(sources []string) []problem {
	// Errors name the key and what is wanted, never the value: the
	// file named by --config may be anything.
	var out []problem
	for i, s := range c.Sources {
		if !slices.Contains(sources, s) {
			out = append(out, problem{fmt.Sprintf("sources[%d]", i), fmt.Sprintf("unknown source (want one of %s)", strings.Join(sources, ", "))})
		}
	}
	if !slices.Contains(KnownOwners, c.Network.Owner) {
		out = append(out, problem{"network.owner", "not one of " + strings.Join(KnownOwners, ", ")})
	}
	for i, e := range c.Events.Network {
		if !slices.Contains(KnownEvents, e) {
			out = append(out, problem{fmt.Sprintf("events.network[%d]", i), "unknown event (want one of " + strings.Join(KnownEvents, ", ") + ")"})
		}
	}
	if d := c.Metrics.TextfileDir; d != "" && (!path.IsAbs(d) || path.Clean(d) != d || d == "/") {
		out = append(out, problem{"metrics.textfile_dir", "not an absolute, clean path of a directory"})
	}
	// Every number and duration goes through the one range check.
	for _, err := range []error{
		bound.CheckOff("boot.wait", time.Duration(c.Boot.Wait), bound.MinTimeout, bound.MaxTimeout),
		bound.Check("boot.device_wait", time.Duration(c.Boot.DeviceWait), 0, MaxDeviceWait),
		bound.Check("vmware.network_wait", time.Duration(c.VMware.NetworkWait), 0, MaxNetworkWait),
		bound.Check("vmware.imc_wait", time.Duration(c.VMware.IMCWait.Or(0)), 0, MaxIMCWait),
	} {
		var be *bound.Error
		if errors.As(err, &be) {
			path, msg, _ := strings.Cut(be.Error(), ": ")
			out = append(out, problem{path, msg})
		}
	}
	return out
}

// MaxDeviceWait bounds boot.device_wait: the wait for late seed devices
// is paid by every boot without a source.
const MaxDeviceWait = 10 * time.Minute

// MaxNetworkWait bounds vmware.network_wait: the wait holds back
// cloud-init, and systemd's start timeout of seedkeeper-boot is extended
// only while it lasts.
const MaxNetworkWait = 10 * time.Minute

// MaxIMCWait bounds vmware.imc_wait: the wait sends no progress to the
// service manager, so with the 30 s it may go on while Tools is seen
// deploying a package it stays inside seedkeeper-boot's TimeoutStartSec
// (3 min).
const MaxIMCWait = 2 * time.Minute

// Duration is a time.Duration written as "90s", "5m" or a number of seconds.
type Duration time.Duration

// Or is *d, or def when d is nil (not set).
func (d *Duration) Or(def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}

// UnmarshalYAML accepts a Go duration string or a number of seconds. The
// range of each key is checked by validate, in one place with the flags'.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		return fmt.Errorf("want a duration such as 90s, not %s", yamlx.NodeKind(n))
	}
	v, ok := bound.Duration(s)
	if !ok {
		return errors.New("not a duration such as 90s, or beyond what a duration holds")
	}
	*d = Duration(v)
	return nil
}
