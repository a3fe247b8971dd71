package netcfg

import (
	"context"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
)

// Ifupdown is Debian's ifupdown (/etc/network/interfaces): one stanza
// file in a directory the image's interfaces file sources.
var Ifupdown = register(&Stack{
	Name: "ifupdown", Title: "ifupdown", Unit: "networking.service",
	Programs: []string{"/sbin/ifup", "/usr/sbin/ifup"},
	render:   renderIfupdownFiles, dir: ifupdownSourceDir,
	keys: and(stackedDevices, except(Noted,
		"v2 link: dhcp-identifier",
		"v2 match: driver",
		"v2 dhcp4-overrides: use-dns use-ntp use-hostname use-domains use-routes use-mtu send-hostname",
		"v2 dhcp6-overrides: use-dns use-ntp use-hostname use-domains use-routes use-mtu send-hostname hostname route-metric")),
	duties: ifupdownDuties,
})

// ifupdownDuties: its places and reload, and what image check says of
// the directory its interfaces file sources.
var ifupdownDuties = stacks.Duties{
	Places: ifupdownPlaces, Reload: reloadIfupdown,
	Dir: stacks.DirWording{
		Config: ifupdownInterfaces,
		Found:  "ifupdown stanzas go in %s",
		None:   ifupdownInterfaces + " sources no directory",
		Clone:  "seedkeeper applies owned NICs live, but has nowhere to write ifupdown stanzas for them: DHCP NICs get no lease",
		Fix:    "add \"source /etc/network/interfaces.d/*\" to " + ifupdownInterfaces,
	},
}

func renderIfupdownFiles(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	sf := &StackFiles{Mode: 0o644}
	if d.Dir == "" {
		sf.Note = "the image's " + ifupdownInterfaces + " sources no directory; add \"source /etc/network/interfaces.d/*\" for seedkeeper's stanzas"
		return sf, nil
	}
	_, links, skipped := physicalPlan(c, owned)
	b, skipped, err := ifupdownStanzas(links, skipped)
	if err != nil {
		return nil, err
	}
	sf.Dir, sf.Skipped, sf.Notes = d.Dir, skipped, UnappliedBy("ifupdown", interfacesOf(links))
	sf.Files = map[string][]byte{ifupdownFile: b}
	return sf, nil
}

// ifupdownPlaces: the directory the image's interfaces file sources,
// persistent (under /etc), unlike the other stacks' directories.
func ifupdownPlaces(root string) ([]stacks.Place, error) {
	dir, err := ifupdownSourceDir(root)
	if err != nil || dir == "" {
		return nil, err
	}
	return []stacks.Place{{Dir: dir, Match: func(n string) bool { return n == ifupdownFile }}}, nil
}

// ifupdownState is where ifupdown records the interfaces it brought up.
const ifupdownState = "/run/network/ifstate"

// reloadIfupdown starts ifup@NAME.service for each interface of the
// stanzas that ifupdown has not brought up yet (outside seedkeeper's
// sandbox, as udev does for allow-hotplug).
func reloadIfupdown(root string, files map[string][]byte) stacks.Reload {
	if !exists(root, ifupdownState) {
		return stacks.Reload{Note: "ifupdown has not run yet; networking.service reads the stanzas"}
	}
	state, _ := fsutil.ReadFileInNoFollow(context.Background(), root, ifupdownState, fsutil.SmallFile)
	up := map[string]bool{}
	for _, l := range strings.Split(string(state), "\n") {
		if n, _, ok := strings.Cut(l, "="); ok {
			up[n] = true
		}
	}
	var r stacks.Reload
	for _, l := range strings.Split(string(files[ifupdownFile]), "\n") {
		// allow-hotplug names every link of the stanzas, auto only
		// those that are not optional.
		if f := strings.Fields(l); len(f) == 2 && (f[0] == "allow-hotplug" || f[0] == "auto") && !up[f[1]] {
			up[f[1]] = true
			r.Steps = append(r.Steps, stacks.ReloadStep{Command: []string{"systemctl", "start", "--no-block", "ifup@" + f[1] + ".service"}})
		}
	}
	if len(r.Steps) == 0 {
		r.Note = "ifupdown has every interface of the stanzas up already"
	}
	return r
}
