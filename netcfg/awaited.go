package netcfg

import (
	"fmt"
	"slices"
	"strings"
)

// renderNetworkdAwaited renders, for the configured NICs that are not
// present (absent returns true; apply.Plan.Absent), the networkd files
// that configure each one the moment it is hot-added, so that networkd
// never gives it, even for a moment, another file that matches it (an
// image's catch-all DHCP on en* or eth*, such as netplan's
// 10-netplan-all-en) before seedkeeper's watch has applied it and
// reloaded networkd. drivers is the hotplug allowlist in force.
//
// A file written ahead takes only a NIC seedkeeper would own (see
// awaitedLinks for which NICs get one): its [Match] has the configured
// MAC with Type=ether (the permanent MAC when the configuration gives
// the NIC a new one), and Driver= with the allowed drivers, networkd's
// space-separated list (globs; a driver name has no glob character,
// CheckDriverName), or the entry's own match driver when the allowlist
// has it. A NIC of a driver that is not allowed never matches it. The
// rest is the NIC's own file as networkdFiles writes it once the NIC is
// owned (same name, so the watch's render replaces it): its addresses
// and routes, DHCP if the configuration says DHCP. The global DNS and
// routes are not on it (the live plan places them among the owned links;
// the watch's render adds them), nor a VLAN over it (created by the live
// apply first). The output is deterministic.
func renderNetworkdAwaited(c *Config, owned, absent func(*Interface) bool, drivers []string) (map[string][]byte, []string, error) {
	owned = orAll(owned)
	v := newView(c, owned)
	files := map[string][]byte{}
	links, notes := awaitedLinks(c, owned, absent, drivers, "networkd file", true)
	for _, aw := range links {
		base := networkdBase(aw.ID)
		lp := v.plan(&aw.Interface)
		b, err := renderNetwork(&lp)
		if err != nil {
			// One NIC's bad field costs that NIC its file ahead, not
			// the others theirs (nor the owned NICs' files).
			notes = append(notes, fmt.Sprintf("%s: not present; no networkd file until it appears: %s.network: %v", aw.LinkName(), base, err))
			continue
		}
		files[base+".network"] = b
		notes = append(notes, fmt.Sprintf("%s: not present; %s.network written ahead (MAC %s, drivers %s), so networkd configures it from it the moment it appears",
			aw.LinkName(), base, aw.MAC, strings.Join(aw.drivers, " ")))
	}
	return files, notes, nil
}

// renderNetworkManagerAwaited is renderNetworkdAwaited for
// NetworkManager: for each configured NIC that is not present, the
// profile seedkeeper writes once the NIC is owned (same file name and
// UUID, so the watch's render replaces it), with a [match] driver= list
// of the allowed drivers (NetworkManager 1.26 and later; a driver name
// has no character that list gives a meaning, CheckDriverName). Bound to
// the NIC's permanent MAC and of higher autoconnect-priority than any
// profile netplan or a person writes without one, it is the profile
// NetworkManager activates the moment an allowed NIC with that MAC
// appears, before a catch-all can; on a NIC of another driver it is not
// available at all, so the image's own profiles take that NIC as before.
// The global DNS and routes are not on it. The output is deterministic.
func renderNetworkManagerAwaited(c *Config, owned, absent func(*Interface) bool, drivers []string) (map[string][]byte, []string, error) {
	files, notes, _ := renderNMAwaited(c, owned, absent, drivers)
	return files, notes, nil
}

// renderNMAwaited is renderNetworkManagerAwaited; it also returns the
// links whose profile it wrote.
func renderNMAwaited(c *Config, owned, absent func(*Interface) bool, drivers []string) (map[string][]byte, []string, []awaitedLink) {
	files := map[string][]byte{}
	var written []awaitedLink
	links, notes := awaitedLinks(c, owned, absent, drivers, "NetworkManager profile", false)
	for _, aw := range links {
		name := fileBase(aw.ID) + ".nmconnection"
		lp := newView(c, orAll(owned)).plan(&aw.Interface)
		b, err := renderKeyfile(&lp, aw.drivers)
		if err != nil {
			// One NIC's bad field costs that NIC its profile ahead.
			notes = append(notes, fmt.Sprintf("%s: not present; no NetworkManager profile until it appears: %v", aw.LinkName(), err))
			continue
		}
		files[name] = b
		written = append(written, aw)
		notes = append(notes, fmt.Sprintf("%s: not present; %s written ahead (MAC %s, drivers %s), so NetworkManager activates it the moment it appears",
			aw.LinkName(), name, aw.MAC, strings.Join(aw.drivers, " ")))
	}
	return files, notes, written
}

// An awaitedLink is a configured NIC that is not present, as a file
// written ahead configures it, and the drivers it may have.
type awaitedLink struct {
	Interface
	drivers []string
}

// awaitedLinks picks the configured physical NICs that are not present
// and not owned and get a file written ahead (what says "file" in the
// notes), each matched by its MAC and the drivers it may have: the
// allowlist, sorted and once each, or the entry's own match driver when
// the allowlist has it.
//
// Not written ahead, with a note saying why: a NIC the configuration
// selects by name or glob only (a name can be taken by any NIC), or by
// driver only; a bond or bridge member (the master needs a live apply
// first, and the member's file alone would configure it as a link of its
// own); any NIC when the allowlist allows nothing or holds a name that is
// not a driver name (there is no "any driver" to leave the driver match
// out for); a NIC whose MAC another physical entry has too (the live
// plan owns no NIC two entries select); unless vlanParents, the link of
// a VLAN (NetworkManager leaves it unmanaged once owned, renderNMConf,
// and has no profile of seedkeeper's for it; networkd's file ahead is
// its own less the VLAN= line, which the watch's render adds). A file
// written ahead owns nothing: the NIC that appears is owned by the live
// plan by its rules, and only what seedkeeper applies live is in the
// receipt.
//
// ifupdown gets none: it configures a hot-added NIC only if an
// allow-hotplug stanza names it.
func awaitedLinks(c *Config, owned, absent func(*Interface) bool, drivers []string, file string, vlanParents bool) ([]awaitedLink, []string) {
	owned = orAll(owned)
	var bad error
	for i, d := range drivers {
		if err := CheckDriverName(d); err != nil {
			bad = fmt.Errorf("allowlist entry %d: %w", i+1, err)
			break
		}
	}
	ds := slices.Compact(slices.Sorted(slices.Values(drivers)))
	// The MACs two physical entries have: the live plan leaves the NIC
	// that appears with one alone (two entries select it).
	macs := map[string]int{}
	for i := range c.Interfaces {
		if ifc := &c.Interfaces[i]; (ifc.Kind == Physical || ifc.Kind == "") && ifc.MAC != "" {
			macs[strings.ToLower(ifc.MAC)]++
		}
	}
	var links []awaitedLink
	var notes []string
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		if ifc.Kind != Physical && ifc.Kind != "" || owned(ifc) || absent == nil || !absent(ifc) {
			continue
		}
		skip := func(why string) {
			notes = append(notes, fmt.Sprintf("%s: not present; no %s until it appears: %s", ifc.LinkName(), file, why))
		}
		aw := awaitedLink{Interface: *ifc, drivers: ds}
		switch {
		case ifc.MAC == "":
			skip("it is matched by name or driver, not by MAC, and any NIC can come to match that")
			continue
		case macs[strings.ToLower(ifc.MAC)] > 1:
			skip("another entry has its MAC, and the live plan leaves a NIC two entries select alone")
			continue
		case c.Master(ifc) != nil:
			skip(fmt.Sprintf("a member of %s, which is built live first", c.Master(ifc).LinkName()))
			continue
		case !vlanParents && len(c.VLANs(ifc)) > 0:
			skip(fmt.Sprintf("the link of %s, which is built live first, and then it is unmanaged", c.VLANs(ifc)[0].LinkName()))
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
		case ifc.MatchDriver != "":
			aw.drivers = []string{ifc.MatchDriver}
		}
		aw.MatchDriver = strings.Join(aw.drivers, " ")
		aw.Kind, aw.MatchName = Physical, ""
		links = append(links, aw)
	}
	return links, notes
}

// orAll is owned, or, when it is nil, a func that owns every interface.
func orAll(owned func(*Interface) bool) func(*Interface) bool {
	if owned == nil {
		return func(*Interface) bool { return true }
	}
	return owned
}
