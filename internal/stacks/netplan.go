package stacks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/unit"
	"github.com/seedkeeper/seedkeeper/internal/yamlx"
)

// Netplan is not a Stack: it runs nothing. It is a configuration layer
// that its systemd generator renders, early in every boot and before
// seedkeeper-boot, into the files of systemd-networkd
// (/run/systemd/network/10-netplan-*) or NetworkManager
// (/run/NetworkManager/system-connections/netplan-*), whichever its YAML
// names as the renderer. So an image that runs netplan runs one of those
// stacks, detected as on any image, and seedkeeper renders for that stack
// with files that come before netplan's on the NICs it owns:
//
//   - networkd takes, for each link, the first file by name whose [Match]
//     matches, across /etc, /run and /usr/lib; seedkeeper's files are
//     "05-seedkeeper-*", before every "10-netplan-*".
//   - NetworkManager activates, of the profiles that may go on a device,
//     the one of highest autoconnect-priority; netplan sets none (0),
//     seedkeeper's profiles have 100 and match by MAC, and seedkeeper's
//     drop-in allows no other profile on an owned NIC (renderNMConf).
//
// No person's netplan file is changed, and seedkeeper writes no netplan
// YAML of its own: a file of seedkeeper's in /run/netplan would come out
// as one more "10-netplan-*" file, sorted by netplan's entry ID, and a
// catch-all such as "all-en" sorts before "eth0".
//
// NetplanInfo says what netplan would render on a root, for the status
// and image check: which entries of its YAML would also take NICs
// seedkeeper owns.
type NetplanInfo struct {
	// Generator is the generator found (a system path).
	Generator string
	// Files are the YAML files netplan reads, as system paths, in the
	// order it reads them (by name; a file in /run/netplan replaces one
	// of the same name in /etc/netplan, which replaces one in
	// /lib/netplan).
	Files []string
	// Entries are the ethernets of those files, in that order.
	Entries []NetplanEntry
	// Notes say what could not be read (which file, why).
	Notes []string
}

// A NetplanEntry is one entry of netplan's "ethernets": what physical
// NICs it matches.
type NetplanEntry struct {
	// File is the YAML file it is in (a system path).
	File string
	// ID is its key under ethernets.
	ID string
	// Renderer is the renderer netplan generates it for: "networkd" or
	// "NetworkManager".
	Renderer string
	// Match is true when the entry has a match: mapping; without one, the
	// ID is the name of the one link it configures.
	Match bool
	// Name, MAC and Driver are its match's fields ("" when not set); Name
	// and Driver may be globs.
	Name, MAC, Driver string
}

// netplanGenerators are where netplan.io installs its generator.
var netplanGenerators = []string{"/usr/lib/systemd/system-generators/netplan", "/lib/systemd/system-generators/netplan"}

// netplanDirs are the directories netplan reads YAML from, the one that
// wins a name first.
var netplanDirs = []string{"/run/netplan", "/etc/netplan", "/lib/netplan"}

// DetectNetplan says whether netplan is the configuration layer of r (a
// running system when r.Live, as netcfg.DetectStack; an image at rest
// otherwise, whose /run/netplan does not count): its generator installed
// and not masked, and YAML files for it to read. It returns nil when it
// is not.
func DetectNetplan(r unit.Root) *NetplanInfo {
	var gen string
	for _, g := range netplanGenerators {
		if exists(r.Dir, g) {
			gen = g
			break
		}
	}
	if gen == "" || generatorMasked(r, "netplan") {
		return nil
	}
	np := &NetplanInfo{Generator: gen}
	byName := map[string]string{}
	for _, dir := range netplanDirs {
		if dir == "/run/netplan" && !r.Live {
			continue
		}
		ents, err := fsutil.ReadDirIn(r.Dir, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			np.Notes = append(np.Notes, "netplan: "+err.Error())
			continue
		}
		for _, e := range ents {
			if _, seen := byName[e.Name()]; seen || !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			byName[e.Name()] = path.Join(dir, e.Name())
		}
	}
	if len(byName) == 0 && len(np.Notes) == 0 {
		return nil
	}
	// One bound for all the files together, beside each file's.
	budget := fsutil.ConfigBudget("netplan's configuration (" + strings.Join(netplanDirs, ", ") + " together)")
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		p := byName[n]
		np.Files = append(np.Files, p)
		b, err := budget.ReadFileIn(context.Background(), r.Dir, p, fsutil.SmallFile)
		if errors.Is(err, fsutil.ErrOverBudget) {
			np.Notes = append(np.Notes, fmt.Sprintf("netplan: %v; it and the files after it not read", err))
			break
		}
		if err != nil {
			np.Notes = append(np.Notes, fmt.Sprintf("netplan: %s not read: %v", p, err))
			continue
		}
		ents, err := ParseNetplan(p, b)
		if err != nil {
			np.Notes = append(np.Notes, err.Error())
		}
		np.Entries = append(np.Entries, ents...)
	}
	return np
}

// generatorMasked reports whether the systemd generator called name is
// masked: a link to /dev/null (or an empty file) of its name in
// /etc/systemd/system-generators, or /run's on a live root.
func generatorMasked(r unit.Root, name string) bool {
	dirs := []string{"/etc/systemd/system-generators"}
	if r.Live {
		dirs = append(dirs, "/run/systemd/system-generators")
	}
	for _, d := range dirs {
		p := path.Join(d, name)
		if t, err := fsutil.ReadlinkIn(r.Dir, p); err == nil && t == "/dev/null" {
			return true
		}
		if fi, err := fsutil.StatIn(r.Dir, p, false); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			return true
		}
	}
	return false
}

// ParseNetplan reads the ethernets of one netplan YAML file (file is its
// path, for the messages). It reads only what says which NICs an entry
// takes and what renders it; the rest is netplan's. A value of the wrong
// kind leaves that entry or field out; only a document that is not YAML
// is an error, which names the file, never its text.
func ParseNetplan(file string, data []byte) ([]NetplanEntry, error) {
	var doc any
	if err := yamlx.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("netplan: %s is not YAML netplan can read: %w", file, yamlx.Describe(err))
	}
	nw := netplanMap(netplanMap(doc)["network"])
	eths := netplanMap(nw["ethernets"])
	if len(eths) == 0 {
		return nil, nil
	}
	renderer := netplanRenderer(nw["renderer"], "networkd")
	renderer = netplanRenderer(eths["renderer"], renderer)
	var out []NetplanEntry
	for _, id := range slices.Sorted(maps.Keys(eths)) {
		e := netplanMap(eths[id])
		if e == nil {
			continue // "renderer", or an entry that is not a mapping
		}
		ent := NetplanEntry{File: file, ID: id, Renderer: netplanRenderer(e["renderer"], renderer)}
		if m := netplanMap(e["match"]); m != nil {
			ent.Match = true
			ent.Name = scalar(m["name"])
			ent.MAC = strings.ToLower(scalar(m["macaddress"]))
			ent.Driver = scalar(m["driver"])
			if l, ok := m["driver"].([]any); ok {
				// netplan 1.x takes a list of drivers.
				var ds []string
				for _, d := range l {
					ds = append(ds, scalar(d))
				}
				ent.Driver = strings.Join(ds, " ")
			}
		} else if _, has := e["match"]; has {
			ent.Match = true // match: {} or null: every NIC
		}
		out = append(out, ent)
	}
	return out, nil
}

// netplanMap is the YAML mapping v with its keys as netplan reads them,
// scalars: a mapping with one key that YAML types otherwise (an entry ID
// 1, a key true) decodes as map[any]any, and must not hide the others.
// It is nil when v is not a mapping.
func netplanMap(v any) map[string]any {
	switch m := v.(type) {
	case map[string]any:
		return m
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[scalar(k)] = x
		}
		return out
	}
	return nil
}

func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func netplanRenderer(v any, def string) string {
	switch s, _ := v.(string); s {
	case "networkd", "NetworkManager":
		return s
	}
	return def
}

// CatchAll reports whether the entry takes NICs by a pattern rather than
// one NIC by its name or MAC: no MAC in its match, and a glob in its
// name, a driver, or nothing (every NIC).
func (e NetplanEntry) CatchAll() bool {
	if !e.Match {
		return false
	}
	return e.MAC == "" && (strings.ContainsAny(e.Name, "*?[") || e.Driver != "" || e.Name == "")
}

// Matches reports whether the entry would take the NIC called name
// (or by one of its alternative names) with this MAC. A match by driver
// is taken to match: the driver is not known here.
func (e NetplanEntry) Matches(mac string, names ...string) bool {
	if !e.Match {
		return slices.Contains(names, e.ID)
	}
	if e.MAC != "" && !strings.EqualFold(e.MAC, mac) {
		return false
	}
	if e.Name != "" && !slices.ContainsFunc(names, func(n string) bool { return globMatch(e.Name, n) }) {
		return false
	}
	return true
}

// globMatch is fnmatch(3) as networkd and netplan use it for names, as
// far as interface names go; a bad pattern matches only itself.
func globMatch(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	if err != nil {
		return pattern == name
	}
	return ok
}

// Describe says what the entry matches, for a person.
func (e NetplanEntry) Describe() string {
	if !e.Match {
		return "the link named " + e.ID
	}
	var f []string
	if e.Name != "" {
		f = append(f, "name "+e.Name)
	}
	if e.MAC != "" {
		f = append(f, "MAC "+e.MAC)
	}
	if e.Driver != "" {
		f = append(f, "driver "+e.Driver)
	}
	if len(f) == 0 {
		return "every NIC"
	}
	return "match " + strings.Join(f, ", ")
}

// exists reports whether the system path p is there under root, links
// resolved inside it.
func exists(root, p string) bool {
	_, err := fsutil.StatIn(root, p, true)
	return err == nil
}
