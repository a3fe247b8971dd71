package netcfg

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// StackFiles is the persistent configuration of the owned links for the
// stack an image runs: which directory, which files, and how to recognise
// the files of ours in that directory that are no longer wanted.
type StackFiles struct {
	Stack Stack
	// Dir is the directory the files go in ("" when nothing is written:
	// StackNone, or ifupdown with an interfaces file that sources none).
	Dir   string
	Files map[string][]byte
	Mode  fs.FileMode
	// Ours reports whether a file name in Dir is one seedkeeper writes
	// (its content must also start with Header before it is removed).
	Ours func(name string) bool
	// Skipped are owned interfaces the stack's files do not describe
	// (bonds, bridges and VLANs outside networkd), for the status.
	Skipped []string
	// Note says why nothing is written, when Dir is "".
	Note string
	// Extra are files outside Dir, by absolute path (mode 0644): the
	// NetworkManager drop-in that makes it activate the profiles.
	Extra map[string][]byte
}

// NMConfFile is the NetworkManager configuration drop-in for the NICs of
// the metadata (see RenderNMConf).
const NMConfFile = "/run/NetworkManager/conf.d/50-seedkeeper.conf"

// RenderNMConf renders a NetworkManager drop-in for the owned physical
// NICs (all when owned is nil; a NIC seedkeeper does not own keeps
// NetworkManager's defaults): no "Wired connection N" made for them
// (no-auto-default), and
// keep-configuration=no for those with a profile, so that a NIC seedkeeper
// has already brought up at boot gets its profile activated (a DHCP lease
// in particular) instead of being taken over as "external" and left
// alone. The owned bonds, bridges and VLANs, which seedkeeper makes live
// and renders no profile for, and their member NICs are unmanaged: with
// keep-configuration=no NetworkManager would disconnect them and clean
// their configuration up. It returns nil when there is nothing to say.
func RenderNMConf(c *Config, owned func(*Interface) bool) []byte {
	if owned == nil {
		owned = func(*Interface) bool { return true }
	}
	var macs, profiled, unmanaged []string
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		stacked := ifc.Kind != Physical && ifc.Kind != ""
		if stacked {
			if owned(ifc) {
				unmanaged = appendNew(unmanaged, "interface-name:"+ifc.LinkName())
			}
			continue
		}
		if ifc.MAC == "" || !owned(ifc) {
			continue
		}
		m := "mac:" + ifc.MAC
		macs = appendNew(macs, m)
		switch {
		case slices.ContainsFunc(c.VLANs(ifc), owned), c.Master(ifc) != nil && owned(c.Master(ifc)):
			unmanaged = appendNew(unmanaged, m)
		default:
			profiled = appendNew(profiled, m)
		}
	}
	if len(macs) == 0 && len(unmanaged) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(Header + "\n")
	if len(macs) > 0 {
		b.WriteString("[main]\nno-auto-default=" + strings.Join(macs, ",") + "\n")
	}
	if len(unmanaged) > 0 {
		b.WriteString("\n[keyfile]\nunmanaged-devices+=" + strings.Join(unmanaged, ";") + "\n")
	}
	if len(profiled) > 0 {
		b.WriteString("\n[device-seedkeeper]\nmatch-device=" + strings.Join(profiled, ";") + "\nkeep-configuration=no\n")
	}
	return []byte(b.String())
}

func appendNew(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// RenderForStack renders the owned interfaces (all when owned is nil) for
// the stack d detected: networkd files, NetworkManager keyfiles (0600) or
// one ifupdown stanza file. With no stack, or an ifupdown image whose
// interfaces file sources no directory, it renders nothing and says why:
// static addresses are still applied live, but a DHCP NIC gets no lease.
func RenderForStack(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	sf := &StackFiles{Stack: d.Stack, Mode: 0o644}
	var err error
	switch d.Stack {
	case StackNetworkd:
		sf.Dir = "/run/systemd/network"
		sf.Files, err = RenderNetworkd(c, owned)
		sf.Ours = func(n string) bool { return strings.HasPrefix(n, "10-seedkeeper-") }
	case StackNetworkManager:
		sf.Dir, sf.Mode = NMConnectionDir, 0o600
		sf.Files, sf.Skipped, err = RenderNetworkManager(c, owned)
		sf.Ours = func(n string) bool {
			return strings.HasPrefix(n, "seedkeeper-") && strings.HasSuffix(n, ".nmconnection")
		}
		if conf := RenderNMConf(c, owned); conf != nil {
			sf.Extra = map[string][]byte{NMConfFile: conf}
		}
	case StackIfupdown:
		if d.IfupdownDir == "" {
			sf.Note = "the image's /etc/network/interfaces sources no directory; add \"source /etc/network/interfaces.d/*\" for seedkeeper's stanzas"
			return sf, nil
		}
		var b []byte
		b, sf.Skipped, err = RenderIfupdown(c, owned)
		sf.Dir = d.IfupdownDir
		sf.Files = map[string][]byte{IfupdownFile: b}
		sf.Ours = func(n string) bool { return n == IfupdownFile }
	case StackNone:
		sf.Note = "no network manager is enabled; DHCP NICs get no lease"
		return sf, nil
	default:
		return nil, fmt.Errorf("render: unknown network stack %q", d.Stack)
	}
	if err != nil {
		return nil, err
	}
	return sf, nil
}
