package seed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
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

// Removal steps, in the order a RemovalPlan lists them.
const (
	// RemoveFile removes a file of seedkeeper's (or a temporary file a
	// run cut short left).
	RemoveFile = "remove"
	// RemoveTree removes a directory with what is in it: the imported
	// copy once given back, a temporary import directory.
	RemoveTree = "remove-tree"
	// RemoveIfEmpty removes a directory seedkeeper made when nothing is
	// left in it.
	RemoveIfEmpty = "remove-if-empty"
	// GiveBack writes a file of a person's imported seed back to Dir.
	GiveBack = "give-back"
	// GivenBack is a file of the imported seed already in Dir, byte for
	// byte: nothing is done to it.
	GivenBack = "given-back"
)

// Step is one step of a RemovalPlan.
type Step struct {
	Op string `json:"op"`
	// Path is the system path acted on.
	Path string `json:"path"`
	// Why says what the path is and why the step acts on it.
	Why string `json:"why"`
	// State is what the path was when the plan was made (its kind, size
	// and modification time, or "absent"; for a file whose content
	// decides the step, its hash too).
	State string `json:"state"`

	data []byte // GiveBack, GivenBack: the imported file's content
	hash string // RemoveFile of a file of seedkeeper's: its content's hash
}

// RemovalPlan is what Remove does under Root, in order: the dry run of
// an uninstall prints it, and Apply carries out exactly it.
type RemovalPlan struct {
	Root  sysroot.Root
	Steps []Step
	// Left names, with the reason, every file found that the plan does
	// not remove or give back.
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
// hashes no file can be told to be seedkeeper's. It is PlanRemove then
// Apply.
func Remove(root sysroot.Root) (Removal, error) {
	p, err := PlanRemove(root)
	if err != nil {
		return Removal{}, err
	}
	return p.Apply()
}

// PlanRemove plans Remove: it reads, and changes nothing.
func PlanRemove(root sysroot.Root) (*RemovalPlan, error) {
	p := &RemovalPlan{Root: root}
	if err := confined(root, "removing the seed"); err != nil {
		return p, err
	}
	for _, d := range []string{Dir, ImportDir} {
		if err := fsutil.NotLinkedIn(string(root), d); err != nil {
			return p, fmt.Errorf("removing the seed: %w", err)
		}
	}
	files, dirs := temps(root)
	for _, t := range files {
		p.add(Step{Op: RemoveFile, Path: t, Why: "a temporary file a run cut short left"})
	}
	for _, t := range dirs {
		p.add(Step{Op: RemoveTree, Path: t, Why: "a temporary import directory a run cut short left"})
	}
	imported, err := readImport(root)
	if err != nil {
		return p, err
	}
	mk, owned, err := readMarker(root)
	if err != nil {
		p.Left = append(p.Left, fmt.Sprintf("%s: %v; without it no file can be told to be seedkeeper's, so nothing in %s was removed", filepath.Join(Dir, MarkerName), err, Dir))
		return p, nil
	}

	// seedkeeper's files, where they still hold what it wrote.
	for _, f := range managedPaths {
		cur, err := readOwnIn(root, f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		_, listed := mk.Files[f]
		if !owned || (!listed && !strings.HasPrefix(f, Dir+"/") && f != OperatorScript && f != UserScript) {
			continue // not seedkeeper's to judge: another tool's file
		}
		if err != nil {
			p.Left = append(p.Left, fmt.Sprintf("%s: %v; left in place", f, err))
			continue
		}
		if b, ok := imported[filepath.Base(f)]; ok && filepath.Dir(f) == Dir && bytes.Equal(b, cur) {
			continue // given back by a run that was cut short
		}
		h := sum(cur)
		if h != mk.Files[f] && h != mk.Pending[f] {
			p.Left = append(p.Left, fmt.Sprintf("%s: changed since seedkeeper wrote it; left in place (remove it by hand if cloud-init must not read it)", f))
			continue
		}
		p.add(Step{Op: RemoveFile, Path: f, Why: "written by seedkeeper, unchanged since (the marker's hash)", hash: h})
	}
	// Anything else in the seed directory is a person's.
	ents, err := fsutil.ReadDirIn(string(root), Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p, fmt.Errorf("removing the seed: %w", err)
	}
	for _, e := range ents {
		f := filepath.Join(Dir, e.Name())
		if e.Name() == MarkerName || slices.Contains(managedPaths, f) || isTemp(files, f) {
			continue
		}
		if _, ok := imported[e.Name()]; ok {
			continue // judged below
		}
		p.Left = append(p.Left, fmt.Sprintf("%s: not written by seedkeeper; left in place", f))
	}

	// The person's seed, given back.
	complete := true
	for _, n := range slices.Sorted(maps.Keys(imported)) {
		f := filepath.Join(Dir, n)
		cur, err := readOwnIn(root, f)
		switch {
		case err == nil && bytes.Equal(cur, imported[n]):
			p.add(Step{Op: GivenBack, Path: f, Why: "the imported seed's, already given back", data: imported[n]})
			continue
		case !errors.Is(err, fs.ErrNotExist) && !p.removes(f):
			complete = false
			p.Left = append(p.Left, fmt.Sprintf("%s: not given back, %s is there and is not seedkeeper's; the imported copy stays in %s", filepath.Join(ImportDir, n), f, ImportDir))
			continue
		}
		p.add(Step{Op: GiveBack, Path: f, Why: "a person's seed, from " + filepath.Join(ImportDir, n) + " (sha256 " + sum(imported[n]) + ")", data: imported[n]})
	}

	// The marker last: a run cut short is recognised by the next one.
	if owned {
		p.add(Step{Op: RemoveFile, Path: filepath.Join(Dir, MarkerName), Why: "seedkeeper's marker of the seed"})
	}
	if complete && imported != nil {
		p.add(Step{Op: RemoveTree, Path: ImportDir, Why: "the imported copy of the seed, given back"})
	}
	// The directories seedkeeper made, when nothing is left in them.
	if owned {
		p.add(Step{Op: RemoveIfEmpty, Path: Dir, Why: "the seed directory seedkeeper made"})
		p.add(Step{Op: RemoveIfEmpty, Path: filepath.Dir(Dir), Why: "the seed directory's parent, with it"})
	}
	return p, nil
}

// add appends s with the state of its path.
func (p *RemovalPlan) add(s Step) {
	s.State = fsutil.StateIn(string(p.Root), s.Path)
	if s.hash != "" {
		s.State += " sha256=" + s.hash
	}
	p.Steps = append(p.Steps, s)
}

// removes reports whether the plan removes the file f.
func (p *RemovalPlan) removes(f string) bool {
	return slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Op == RemoveFile && s.Path == f })
}

func isTemp(files []string, f string) bool { return slices.Contains(files, f) }

// Apply carries out the plan, step by step in its order, and says what
// was done. A file of seedkeeper's is removed only when it still holds
// what the plan read, and a file is given back only where the path is
// still absent (giveBack); otherwise it is left and named, and the
// imported copy is kept. A step that fails ends the run with the error.
func (p *RemovalPlan) Apply() (Removal, error) {
	res := Removal{Left: slices.Clone(p.Left)}
	root := p.Root
	kept := false // a file of the imported seed not given back: its copy stays
	for _, s := range p.Steps {
		switch s.Op {
		case RemoveFile:
			if s.hash == "" && strings.Contains(path.Base(s.Path), ".tmp-") {
				fsutil.RemoveIn(string(root), s.Path, false)
				continue
			}
			switch err := removeFile(root, s.Path, s.hash); {
			case s.hash != "" && errors.Is(err, fs.ErrNotExist):
				continue
			case errors.Is(err, fsutil.ErrChanged):
				res.Left = append(res.Left, fmt.Sprintf("%s: changed since the plan was made; left in place", s.Path))
				continue
			case err != nil:
				return res, err
			}
			if s.hash != "" {
				res.Removed = append(res.Removed, s.Path)
			}
		case RemoveTree:
			if s.Path == ImportDir && kept {
				continue
			}
			err := fsutil.RemoveIn(string(root), s.Path, true)
			if s.Path == ImportDir && err != nil {
				return res, fmt.Errorf("removing the imported copy of the seed: %w", err)
			}
		case GiveBack, GivenBack:
			why, err := giveBack(root, s)
			if err != nil {
				return res, err
			}
			if why != "" {
				kept = true
				res.Left = append(res.Left, fmt.Sprintf("%s: not given back, %s; the imported copy stays in %s", filepath.Join(ImportDir, path.Base(s.Path)), why, ImportDir))
				continue
			}
			res.Restored = append(res.Restored, s.Path)
		case RemoveIfEmpty:
			if gone, _ := fsutil.RemoveEmptyDirIn(string(root), s.Path); !gone {
				return res, nil // the parent is not empty either
			}
		}
	}
	return res, nil
}

// giveBack carries out a GiveBack or GivenBack step only as far as what
// the plan read still holds: a file is written back only where nothing
// is (fsutil.CreateFileIn: the kernel refuses the write when anything is
// there, so a file made at the path since the plan is never
// overwritten), and a file already given back counts only while it still
// holds the imported bytes. Otherwise why says what changed, and nothing
// is written.
func giveBack(root sysroot.Root, s Step) (why string, err error) {
	if s.Op == GivenBack {
		if same, err := fsutil.SameFileIn(context.Background(), string(root), s.Path, s.data); err != nil || !same {
			return s.Path + " no longer holds it (changed since the plan was made)", nil
		}
		return "", nil
	}
	err = fsutil.CreateFileIn(string(root), s.Path, s.data, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return s.Path + " holds a file made or changed since the plan was made, which is left as it is", nil
	}
	if err != nil {
		return "", fmt.Errorf("giving back the imported seed: %w", err)
	}
	return "", nil
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
// directory; with hash, only while p holds content of that hash
// (fsutil.RemoveInIfSum: otherwise an error wrapping fsutil.ErrChanged,
// or fs.ErrNotExist when it is gone).
func removeFile(root sysroot.Root, p, hash string) error {
	rm := func() error { return fsutil.RemoveIn(string(root), p, false) }
	if hash != "" {
		rm = func() error { return fsutil.RemoveInIfSum(string(root), p, hash, maxFile) }
	}
	if err := rm(); err != nil {
		return fmt.Errorf("removing the seed: %w", err)
	}
	if err := fsutil.SyncDirIn(string(root), filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the seed: %w", err)
	}
	return nil
}
