package netcfg

import (
	"io/fs"
	"slices"
	"strings"
)

// StackFiles is the persistent configuration of the owned links for the
// stack an image runs: which directory and which files.
type StackFiles struct {
	Stack *Stack
	// Dir is the directory the files go in ("" when nothing is written:
	// no stack, or ifupdown with an interfaces file that sources none).
	Dir   string
	Files map[string][]byte
	Mode  fs.FileMode
	// Skipped are owned interfaces the stack's files do not describe
	// (bonds, bridges and VLANs outside networkd), for the status.
	Skipped []string
	// Note says why nothing is written, when Dir is "".
	Note string
	// Notes name, per link the files describe, the settings of the
	// configuration they do not say (see Keys), for the status and the
	// log.
	Notes []string
	// Extra are files outside Dir, by absolute path (mode 0644): the
	// NetworkManager drop-in that makes it activate the profiles.
	Extra map[string][]byte
}

// nmConfFile is the NetworkManager configuration drop-in for the NICs of
// the metadata (see renderNMConf).
const nmConfFile = "/run/NetworkManager/conf.d/50-seedkeeper.conf"

// nmAheadConfFile is the NetworkManager configuration drop-in for the
// configured NICs that are not present (see Stack.RenderAhead).
const nmAheadConfFile = "/run/NetworkManager/conf.d/50-seedkeeper-ahead.conf"

// renderNMConf renders a NetworkManager drop-in for the owned physical
// NICs, as a view of the plan of the render (physicalPlan: plans is every
// owned link's, links those with a profile; a NIC seedkeeper does not own
// is in neither and keeps NetworkManager's defaults): no "Wired connection N" made for them
// (no-auto-default), and, for those with a profile,
// keep-configuration=no, so that a NIC seedkeeper has already brought up
// at boot gets its profile activated (a DHCP lease in particular)
// instead of being taken over as "external" and left alone, and
// allowed-connections with seedkeeper's profiles only (each bound to its
// NIC's MAC), so that no other profile that matches an owned NIC goes on
// it: not netplan's catch-all, not one that cloud-init's hotplug or a
// person wrote, not when seedkeeper's profile failed to activate and
// NetworkManager looks for another (a person who wants a NIC back takes
// it out of the metadata's network config or the allowlist). The owned
// bonds, bridges and VLANs, which seedkeeper makes live and renders no
// profile for, and their member NICs and the parents of the VLANs (the
// plan's Master and VLANs) are unmanaged: with
// keep-configuration=no NetworkManager would disconnect them and clean
// their configuration up. The two lists of [main] and [keyfile] are
// appended to ("+="), never set: an image's own no-auto-default=* (RHEL's
// NetworkManager-config-server) or unmanaged-devices stays in force for
// every NIC seedkeeper does not own. The device sections are named for
// seedkeeper and match only its NICs. It returns nil when there is
// nothing to say.
func renderNMConf(plans []LinkPlan, links []*LinkPlan) []byte {
	var macs, profiled, uuids, unmanaged []string
	for i := range plans {
		lp := &plans[i]
		if lp.Kind != Physical && lp.Kind != "" {
			unmanaged = appendNew(unmanaged, "interface-name:"+lp.LinkName())
			continue
		}
		if lp.MAC == "" {
			continue
		}
		m := "mac:" + lp.MAC
		macs = appendNew(macs, m)
		switch {
		case len(lp.VLANs) > 0, lp.Master != nil:
			unmanaged = appendNew(unmanaged, m)
		case slices.Contains(links, lp):
			// The profile nmKeyfiles writes, bound to the MAC.
			profiled = appendNew(profiled, m)
			uuids = appendNew(uuids, "uuid:"+nmUUID(lp.ID))
		}
	}
	if len(macs) == 0 && len(unmanaged) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(Header + "\n")
	if len(macs) > 0 {
		b.WriteString("[main]\nno-auto-default+=" + strings.Join(macs, ",") + "\n")
	}
	if len(unmanaged) > 0 {
		b.WriteString("\n[keyfile]\nunmanaged-devices+=" + strings.Join(unmanaged, ";") + "\n")
	}
	if len(profiled) > 0 {
		b.WriteString("\n[device-seedkeeper]\nmatch-device=" + strings.Join(profiled, ";") + "\nkeep-configuration=no\nallowed-connections=" + strings.Join(uuids, ";") + "\n")
	}
	return []byte(b.String())
}

func appendNew(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// renderForStack renders the owned interfaces (all when owned is nil) for
// the stack d detected (see Stack.Render). With no stack it renders
// nothing and says why: static addresses are still applied live, but a
// DHCP NIC gets no lease.
func renderForStack(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	if d.Stack == nil {
		return &StackFiles{Note: "no network manager is enabled; DHCP NICs get no lease"}, nil
	}
	return d.Stack.Render(d, c, owned)
}
