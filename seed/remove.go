package seed

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seedkeeper/seedkeeper/internal/fsutil"
	"github.com/seedkeeper/seedkeeper/internal/sysroot"
)

// Removal says what Remove did and what it left. Paths are system paths.
type Removal struct {
	// Removed are the files of seedkeeper's that were taken away: each
	// still held what the marker says seedkeeper wrote.
	Removed []string
	// Restored are the files of a person's imported seed given back to
	// Dir, byte for byte.
	Restored []string
	// Left names, with the reason, every file Remove found and did not
	// remove or give back: changed by hand, not written by seedkeeper, or
	// in the way of an imported file.
	Left []string
}

// Remove undoes what Write did under root, for a package removal: it
// removes every file of seedkeeper's (seed files, SmartOS per-boot
// scripts and legacy user-data) whose content is still what the marker
// says seedkeeper wrote, gives back a seed a person had put in Dir before
// seedkeeper first ran (from ImportDir, byte for byte), and removes the
// marker. A file whose content is not what seedkeeper wrote is left in
// place and named in Left, as is an imported file that cannot be given
// back because another file now has its name. Running it again changes
// nothing. A marker that cannot be read removes nothing: without its
// hashes no file can be told to be seedkeeper's.
func Remove(root sysroot.Root) (Removal, error) {
	var res Removal
	if err := confined(root, "removing the seed"); err != nil {
		return res, err
	}
	for _, d := range []string{Dir, ImportDir} {
		if err := fsutil.NotLinkedIn(string(root), d); err != nil {
			return res, fmt.Errorf("removing the seed: %w", err)
		}
	}
	cleanTemps(root)
	imported, err := readImport(root)
	if err != nil {
		return res, err
	}
	mk, owned, err := readMarker(root)
	if err != nil {
		res.Left = append(res.Left, fmt.Sprintf("%s: %v; without it no file can be told to be seedkeeper's, so nothing in %s was removed", filepath.Join(Dir, MarkerName), err, Dir))
		return res, nil
	}

	// seedkeeper's files, where they still hold what it wrote.
	for _, p := range managedPaths {
		cur, err := readOwnIn(root, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		_, listed := mk.Files[p]
		if !owned || (!listed && !strings.HasPrefix(p, Dir+"/") && p != OperatorScript && p != UserScript) {
			continue // not seedkeeper's to judge: another tool's file
		}
		if err != nil {
			res.Left = append(res.Left, fmt.Sprintf("%s: %v; left in place", p, err))
			continue
		}
		if b, ok := imported[filepath.Base(p)]; ok && filepath.Dir(p) == Dir && bytes.Equal(b, cur) {
			continue // given back by a run that was cut short
		}
		if h := sum(cur); h != mk.Files[p] && h != mk.Pending[p] {
			res.Left = append(res.Left, fmt.Sprintf("%s: changed since seedkeeper wrote it; left in place (remove it by hand if cloud-init must not read it)", p))
			continue
		}
		if err := removeFile(root, p); err != nil {
			return res, err
		}
		res.Removed = append(res.Removed, p)
	}
	// Anything else in the seed directory is a person's.
	ents, err := fsutil.ReadDirIn(string(root), Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("removing the seed: %w", err)
	}
	for _, e := range ents {
		p := filepath.Join(Dir, e.Name())
		if e.Name() == MarkerName || slices.Contains(managedPaths, p) {
			continue
		}
		if _, ok := imported[e.Name()]; ok {
			continue // judged below
		}
		res.Left = append(res.Left, fmt.Sprintf("%s: not written by seedkeeper; left in place", p))
	}

	// The person's seed, given back.
	complete := true
	for _, n := range slices.Sorted(maps.Keys(imported)) {
		p := filepath.Join(Dir, n)
		cur, err := readOwnIn(root, p)
		switch {
		case err == nil && bytes.Equal(cur, imported[n]):
			res.Restored = append(res.Restored, p)
			continue
		case !errors.Is(err, fs.ErrNotExist):
			complete = false
			res.Left = append(res.Left, fmt.Sprintf("%s: not given back, %s is there and is not seedkeeper's; the imported copy stays in %s", filepath.Join(ImportDir, n), p, ImportDir))
			continue
		}
		if err := fsutil.WriteFileIn(string(root), p, imported[n], 0o600); err != nil {
			return res, fmt.Errorf("giving back the imported seed: %w", err)
		}
		res.Restored = append(res.Restored, p)
	}

	// The marker last: a run cut short is recognised by the next one.
	if owned {
		if err := removeFile(root, filepath.Join(Dir, MarkerName)); err != nil {
			return res, err
		}
	}
	if complete && imported != nil {
		if err := fsutil.RemoveIn(string(root), ImportDir, true); err != nil {
			return res, fmt.Errorf("removing the imported copy of the seed: %w", err)
		}
	}
	// The directories seedkeeper made, when nothing is left in them.
	if owned {
		if gone, _ := fsutil.RemoveEmptyDirIn(string(root), Dir); gone {
			fsutil.RemoveEmptyDirIn(string(root), filepath.Dir(Dir))
		}
	}
	return res, nil
}

// readImport returns the files of the imported seed by name, nil when
// nothing was imported.
func readImport(root sysroot.Root) (map[string][]byte, error) {
	ents, err := fsutil.ReadDirIn(string(root), ImportDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the imported seed: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := readOwnIn(root, filepath.Join(ImportDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading the imported seed: %w", err)
		}
		files[e.Name()] = b
	}
	return files, nil
}

// removeFile removes the system path p under root and syncs its
// directory.
func removeFile(root sysroot.Root, p string) error {
	if err := fsutil.RemoveIn(string(root), p, false); err != nil {
		return fmt.Errorf("removing the seed: %w", err)
	}
	if err := fsutil.SyncDirIn(string(root), filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the seed: %w", err)
	}
	return nil
}
