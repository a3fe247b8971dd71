package netcfg

import (
	"fmt"
	"slices"
	"strings"
)

// RenderNetworkdAwaited renders, for the configured NICs that are not
// present (absent returns true; apply.Plan.Absent), the networkd files
// that configure each one the moment it is hot-added, so that networkd
// never gives it, even for a moment, another file that matches it (an
// image's catch-all DHCP on en* or eth*, such as netplan's
// 10-netplan-all-en) before seedkeeper's watch has applied it and
// reloaded networkd. drivers is the hotplug allowlist in force.
//
// A file written ahead takes only a NIC seedkeeper would own:
//
//   - [Match] has the configured MAC with Type=ether (the permanent MAC
//     when the configuration gives the NIC a new one), and Driver= with
//     the allowed drivers, networkd's space-separated list (globs; a
//     driver name has no glob character, CheckDriverName), or the
//     entry's own match driver when the allowlist has it. A NIC of a
//     driver that is not allowed never matches it; an allowlist that
//     allows nothing, or holds a name that is not a driver name, writes
//     no file. The allowlist is always a list of names: there is no
//     "any driver" to leave Driver= out for.
//   - The rest is the NIC's own file as RenderNetworkd writes it once the
//     NIC is owned (same name, so the watch's render replaces it): its
//     addresses and routes, DHCP if the configuration says DHCP. The
//     global DNS and routes are not on it (the live plan places them
//     among the owned links; the watch's render adds them), nor a VLAN
//     over it (created by the live apply first).
//
// Not written ahead, with a note saying why: a NIC the configuration
// selects by name or glob only (a name can be taken by any NIC), or by
// driver only; a bond or bridge member (the master needs a live apply
// first, and the member's file alone would configure it as a link of its
// own). A file written ahead owns nothing: the NIC that appears is owned
// by the live plan by its rules, and only what seedkeeper applies live
// is in the receipt.
//
// Only networkd is told: NetworkManager gives a NIC without a profile
// its own "Wired connection" until the watch writes seedkeeper's
// profile, and ifupdown configures a hot-added NIC only if an
// allow-hotplug stanza names it. The output is deterministic.
func RenderNetworkdAwaited(c *Config, owned, absent func(*Interface) bool, drivers []string) (map[string][]byte, []string, error) {
	if owned == nil {
		owned = func(*Interface) bool { return true }
	}
	v := newView(c, owned)
	var bad error
	for i, d := range drivers {
		if err := CheckDriverName(d); err != nil {
			bad = fmt.Errorf("allowlist entry %d: %w", i+1, err)
			break
		}
	}
	ds := slices.Compact(slices.Sorted(slices.Values(drivers)))
	files := map[string][]byte{}
	var notes []string
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		if ifc.Kind != Physical && ifc.Kind != "" || owned(ifc) || absent == nil || !absent(ifc) {
			continue
		}
		base := networkdBase(ifc.ID)
		skip := func(why string) {
			notes = append(notes, fmt.Sprintf("%s: not present; no networkd file until it appears: %s", ifc.LinkName(), why))
		}
		aw := *ifc
		switch {
		case ifc.MAC == "":
			skip("it is matched by name or driver, not by MAC, and any NIC can come to match that")
			continue
		case c.Master(ifc) != nil:
			skip(fmt.Sprintf("a member of %s, which is built live first", c.Master(ifc).LinkName()))
			continue
		case bad != nil:
			skip(bad.Error())
			continue
		case len(ds) == 0:
			skip("the hotplug allowlist allows no driver")
			continue
		case ifc.MatchDriver != "" && !slices.Contains(ds, ifc.MatchDriver):
			skip(fmt.Sprintf("its match driver %s is not allowed", ifc.MatchDriver))
			continue
		case ifc.MatchDriver == "":
			aw.MatchDriver = strings.Join(ds, " ")
		}
		aw.Kind, aw.MatchName = Physical, ""
		b, err := renderNetwork(v, &aw, DNS{}, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("render networkd: %s.network: %w", base, err)
		}
		files[base+".network"] = b
		notes = append(notes, fmt.Sprintf("%s: not present; %s.network written ahead (MAC %s, drivers %s), so networkd configures it from it the moment it appears", ifc.LinkName(), base, ifc.MAC, aw.MatchDriver))
	}
	return files, notes, nil
}
