package netcfg

import (
	"context"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
)

// Ifupdown is Debian's ifupdown (/etc/network/interfaces): one stanza
// file in a directory the image's interfaces file sources.
var Ifupdown = &Stack{
	Name: "ifupdown", Title: "ifupdown", Unit: "networking.service",
	Programs: []string{"/sbin/ifup", "/usr/sbin/ifup"},
	render:   renderIfupdownFiles, places: ifupdownPlaces, reload: reloadIfupdown,
}

func renderIfupdownFiles(d Detection, c *Config, owned func(*Interface) bool) (*StackFiles, error) {
	sf := &StackFiles{Mode: 0o644}
	if d.IfupdownDir == "" {
		sf.Note = "the image's " + IfupdownInterfaces + " sources no directory; add \"source /etc/network/interfaces.d/*\" for seedkeeper's stanzas"
		return sf, nil
	}
	b, skipped, err := RenderIfupdown(c, owned)
	if err != nil {
		return nil, err
	}
	links := plainLinks(c, owned)
	sf.Dir, sf.Skipped, sf.Notes = d.IfupdownDir, skipped, UnappliedBy("ifupdown", links)
	sf.Files = map[string][]byte{IfupdownFile: b}
	return sf, nil
}

// ifupdownPlaces: the directory the image's interfaces file sources,
// persistent (under /etc), unlike the other stacks' directories.
func ifupdownPlaces(root string) ([]Place, error) {
	dir, err := IfupdownSourceDir(root)
	if err != nil || dir == "" {
		return nil, err
	}
	return []Place{{Dir: dir, match: func(n string) bool { return n == IfupdownFile }}}, nil
}

// ifupdownState is where ifupdown records the interfaces it brought up.
const ifupdownState = "/run/network/ifstate"

// reloadIfupdown starts ifup@NAME.service for each interface of the
// stanzas that ifupdown has not brought up yet (outside seedkeeper's
// sandbox, as udev does for allow-hotplug).
func reloadIfupdown(root string, sf *StackFiles) Reload {
	if !exists(root, ifupdownState) {
		return Reload{Note: "ifupdown has not run yet; networking.service reads the stanzas"}
	}
	state, _ := fsutil.ReadFileInNoFollow(context.Background(), root, ifupdownState, fsutil.SmallFile)
	up := map[string]bool{}
	for _, l := range strings.Split(string(state), "\n") {
		if n, _, ok := strings.Cut(l, "="); ok {
			up[n] = true
		}
	}
	var r Reload
	if sf != nil {
		for _, l := range strings.Split(string(sf.Files[IfupdownFile]), "\n") {
			// allow-hotplug names every link of the stanzas, auto
			// only those that are not optional.
			if f := strings.Fields(l); len(f) == 2 && (f[0] == "allow-hotplug" || f[0] == "auto") && !up[f[1]] {
				up[f[1]] = true
				r.Steps = append(r.Steps, ReloadStep{Command: []string{"systemctl", "start", "--no-block", "ifup@" + f[1] + ".service"}})
			}
		}
	}
	if len(r.Steps) == 0 {
		r.Note = "ifupdown has every interface of the stanzas up already"
	}
	return r
}
