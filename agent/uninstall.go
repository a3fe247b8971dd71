package agent

import (
	"bytes"
	"context"
	"fmt"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/stacks"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
	"github.com/seedkeeper/seedkeeper/netcfg"
	"github.com/seedkeeper/seedkeeper/nosource"
	"github.com/seedkeeper/seedkeeper/seed"
)

// Uninstalled says what Uninstall did and left. Paths are system paths.
type Uninstalled struct {
	Removed  []string `json:"removed"`
	Restored []string `json:"restored"`
	// Left names, with the reason, every file of seedkeeper's kind that
	// was left in place.
	Left []string `json:"left"`
}

// Uninstall takes away what seedkeeper wrote outside its own state
// directory, for a package removal: the seed, its marker and the SmartOS
// files (seed.Remove, which also gives a person's imported seed back), the
// network files rendered for any stack, including persistent ifupdown
// stanzas, and the no-source gate. A file is removed only when it is still
// what seedkeeper wrote: for the seed the marker's hashes say so, for a
// rendered network file its name and its first line (netcfg.Header).
// /etc/resolv.conf is left, named: removing it would end name resolution
// now, and the metadata's resolvers are still the right ones until the
// next boot. The live network and the state in StateDir are not touched
// (a purge removes the state, all but an import not given back). Every
// path is reached under root through fsutil's in-root functions.
func Uninstall(root sysroot.Root) (*Uninstalled, error) {
	u := &Uninstalled{}
	sr, err := seed.Remove(root)
	u.Removed, u.Restored, u.Left = sr.Removed, sr.Restored, sr.Left
	if err != nil {
		return u, err
	}
	if err := removeRendered(root, u); err != nil {
		return u, err
	}
	if _, err := fsutil.StatIn(string(root), nosource.MarkerPath, false); err == nil {
		if err := fsutil.RemoveIn(string(root), nosource.MarkerPath, false); err != nil {
			return u, err
		}
		u.Removed = append(u.Removed, nosource.MarkerPath)
	}
	if writtenByUs(root, "/etc/resolv.conf") {
		u.Left = append(u.Left, "/etc/resolv.conf: written by seedkeeper from the metadata's resolvers; left in place so that names still resolve (cloud-init or the network stack manages it after the next boot)")
	}
	return u, nil
}

// removeRendered removes the network files of ours in every place of
// every stack (netcfg.Stacks), by the rule the renderers and seal use
// (stacks.Walk: a name seedkeeper gives, its header in place); a
// file of such a name that is not ours is left and named.
func removeRendered(root sysroot.Root, u *Uninstalled) error {
	for _, s := range netcfg.Stacks {
		places, err := stacks.Of(s.Name).Places(root.Path("/"))
		if err != nil {
			return fmt.Errorf("network files: %w", err)
		}
		for _, pl := range places {
			if err := fsutil.NotLinkedIn(string(root), pl.Dir); err != nil {
				return fmt.Errorf("network files: %w", err)
			}
			found, err := stacks.Walk(string(root), pl)
			if err != nil {
				return fmt.Errorf("network files: %w", err)
			}
			for _, f := range found {
				if !f.Ours {
					u.Left = append(u.Left, f.Path+": not written by seedkeeper (or changed since); left in place")
					continue
				}
				if err := fsutil.RemoveIn(string(root), f.Path, false); err != nil {
					return fmt.Errorf("network files: %w", err)
				}
				u.Removed = append(u.Removed, f.Path)
			}
		}
	}
	return nil
}

// writtenByUs reports whether the system path p under root is a regular
// file (not a link) that starts with the header every network file
// seedkeeper writes starts with.
func writtenByUs(root sysroot.Root, p string) bool {
	b, err := fsutil.ReadFileInNoFollow(context.Background(), string(root), p, fsutil.SmallFile)
	return err == nil && bytes.HasPrefix(b, []byte(netcfg.Header))
}
