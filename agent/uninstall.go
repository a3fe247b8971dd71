package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
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
// (a purge removes the state).
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
	gate := root.Path(nosource.MarkerPath)
	if err := os.Remove(gate); err == nil {
		u.Removed = append(u.Removed, nosource.MarkerPath)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return u, fmt.Errorf("removing %s: %w", nosource.MarkerPath, err)
	}
	if writtenByUs(root.Path("/etc/resolv.conf")) {
		u.Left = append(u.Left, "/etc/resolv.conf: written by seedkeeper from the metadata's resolvers; left in place so that names still resolve (cloud-init or the network stack manages it after the next boot)")
	}
	return u, nil
}

// renderedDirs are the directories and files the network stacks read that
// seedkeeper may have rendered into, with netcfg's rule for which names
// there are its own (netcfg.RenderForStack keeps that rule).
func renderedDirs(root sysroot.Root) (dirs []*netcfg.StackFiles, extra []string, err error) {
	ifupdown, err := netcfg.IfupdownSourceDir(root.Path("/"))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", netcfg.IfupdownInterfaces, err)
	}
	ifupdownDirs := []string{"/etc/network/interfaces.d"}
	if ifupdown != "" && !slices.Contains(ifupdownDirs, ifupdown) {
		ifupdownDirs = append(ifupdownDirs, ifupdown)
	}
	var ds []netcfg.Detection
	ds = append(ds, netcfg.Detection{Stack: netcfg.StackNetworkd}, netcfg.Detection{Stack: netcfg.StackNetworkManager})
	for _, d := range ifupdownDirs {
		ds = append(ds, netcfg.Detection{Stack: netcfg.StackIfupdown, IfupdownDir: d})
	}
	for _, d := range ds {
		sf, err := netcfg.RenderForStack(d, &netcfg.Config{}, nil)
		if err != nil {
			return nil, nil, err
		}
		dirs = append(dirs, sf)
	}
	return dirs, []string{netcfg.NMConfFile}, nil
}

// removeRendered removes the network files of ours for every stack.
func removeRendered(root sysroot.Root, u *Uninstalled) error {
	dirs, extra, err := renderedDirs(root)
	if err != nil {
		return err
	}
	var paths []string
	for _, sf := range dirs {
		dir := root.Path(sf.Dir)
		if err := fsutil.NotLinked(dir); err != nil {
			return fmt.Errorf("network files: %w", err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("network files: %w", err)
		}
		for _, e := range ents {
			if sf.Ours(e.Name()) {
				paths = append(paths, filepath.Join(sf.Dir, e.Name()))
			}
		}
	}
	for _, p := range extra {
		if _, err := os.Lstat(root.Path(p)); err == nil {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		if !writtenByUs(root.Path(p)) {
			u.Left = append(u.Left, p+": not written by seedkeeper (or changed since); left in place")
			continue
		}
		if err := os.Remove(root.Path(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("network files: %w", err)
		}
		u.Removed = append(u.Removed, p)
	}
	return nil
}

// writtenByUs reports whether path is a regular file (not a link) that
// starts with the header every network file seedkeeper writes starts with.
func writtenByUs(path string) bool {
	b, err := fsutil.ReadFileNoFollow(context.Background(), path, fsutil.SmallFile)
	return err == nil && bytes.HasPrefix(b, []byte(netcfg.Header))
}
